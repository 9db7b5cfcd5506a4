// Package fuzzkit holds what the fuzz targets of boltmesh's packages
// share: a guard that turns an iteration that hangs into a crash the
// fuzzing engine records (it would otherwise only stall), and a check
// that an iteration left no goroutine behind.
package fuzzkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// Guard panics, with every goroutine's stack and what, unless the
// returned stop is called within d. A fuzz iteration that deadlocks then
// kills its worker, and the engine saves the input as a crasher. The
// engine does not show a worker's dying words, so the panic's text is
// also written to a file, boltmesh-fuzz-hang-PID.txt in os.TempDir(),
// whose name the panic gives. Keep d under 10 s: the engine kills a
// worker that spends longer on one input first, silently
// (go.dev/issue/56238).
func Guard(d time.Duration, what func() string) (stop func() bool) {
	t := time.AfterFunc(d, func() {
		msg := fmt.Sprintf("fuzz iteration still running after %v: %s\n%s", d, what(), Stacks())
		name := filepath.Join(os.TempDir(), fmt.Sprintf("boltmesh-fuzz-hang-%d.txt", os.Getpid()))
		if err := os.WriteFile(name, []byte(msg), 0o644); err == nil {
			msg = "(also in " + name + ") " + msg
		}
		panic(msg)
	})
	return t.Stop
}

// Stacks returns the stacks of every goroutine.
func Stacks() string {
	buf := make([]byte, 4<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// WaitGoroutines waits up to d until at most base goroutines run, and
// otherwise returns an error with their stacks.
func WaitGoroutines(base int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			return fmt.Errorf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), base, Stacks())
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
