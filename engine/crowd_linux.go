package engine

import (
	"bytes"
	"os"
	"strconv"
)

// runnableThreads returns how many threads of the whole machine are
// running or ready to run now (/proc/stat's procs_running, which network
// namespaces share).
func runnableThreads() (int, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	_, rest, ok := bytes.Cut(b, []byte("\nprocs_running "))
	if !ok {
		return 0, false
	}
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	n, err := strconv.Atoi(string(rest))
	return n, err == nil
}
