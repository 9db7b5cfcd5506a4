package spin

import (
	"time"

	"golang.org/x/sys/unix"
)

// Yield gives this thread's core to another runnable thread, of any
// process, if one waits for it (sched_yield).
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// CrowdedSpin is Options.Spin's default on a crowded machine (more ranks
// than cores): waits spin as long as elsewhere, but give the core up
// between polls (Yield), so that the rank waited for gets to run.
const CrowdedSpin = 200 * time.Microsecond
