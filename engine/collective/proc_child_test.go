package collective_test

import (
	"fmt"
	"github.com/boltmesh/boltmesh/internal/childproc"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// procOpts are the transport options of every rank of these tests: a small
// symmetric heap, as the collectives do not use it, and the single copy
// from 256 KiB, so that ranks in separate processes copy large pieces
// straight from each other's memory (engine.Options.SingleCopyMin; the
// rings between processes are what the default runs, in every other
// multi-process test).
var procOpts = engine.Options{HeapSize: 1 << 20, SingleCopyMin: 256 << 10}

// procRunChild runs one child role (see procStart); a non-nil error makes
// the child exit 1.
func procRunChild(c childproc.Child) error {
	role, rank, addrs, ln := c.Role, c.Rank, c.Addrs, c.Listener
	if ln == nil {
		return fmt.Errorf("role %q: no listener inherited", role)
	}
	switch role {
	case "allreduce":
		return procAllReduceChild(rank, addrs, ln)
	case "block":
		return procBlockChild(rank, addrs, ln)
	case "bench-allreduce":
		return benchARChild(rank, addrs, ln)
	case "matrix":
		return matrixChild(rank, addrs, ln)
	case "deadline":
		return deadlineChild(rank, addrs, ln)
	case "lossloop":
		return procLossChild(rank, addrs, ln)
	}
	ln.Close()
	return fmt.Errorf("unknown role %q", role)
}

// procBlockChild joins the mesh and then does nothing until it is killed
// (or its parent goes away).
func procBlockChild(rank int, addrs []string, ln net.Listener) error {
	tr, err := engine.FromListener(rank, len(addrs), ln, addrs, procOpts)
	if err != nil {
		return err
	}
	defer tr.Close()
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// procListeners binds n loopback listeners on ephemeral ports.
func procListeners(t testing.TB, n int) ([]net.Listener, []string) {
	return meshtest.Listeners(t, n)
}

// procChild is a rank running in a child process.
type procChild = childproc.Proc

// procStart runs rank as a child process with the given role and extra
// environment; the listener ln is passed down as fd 3 and closed here.
// The child is killed and reaped at cleanup if still running.
func procStart(t testing.TB, role string, rank int, ln net.Listener, addrs []string, env ...string) *procChild {
	t.Helper()
	return procStartWith(t, role, rank, ln, addrs, os.Stdout, env...)
}

// procStartWith is procStart with the child's stdout going to stdout.
func procStartWith(t testing.TB, role string, rank int, ln net.Listener, addrs []string, stdout *os.File, env ...string) *procChild {
	t.Helper()
	return childproc.Start(t, childproc.Spec{Role: role, Rank: rank, Addrs: addrs, Listener: ln, Env: env, Stdout: stdout})
}

// procWaitAll waits for every child and reports each failure.
func procWaitAll(t testing.TB, children []*procChild, timeout time.Duration) {
	t.Helper()
	for _, c := range children {
		if err := c.WaitFor(timeout); err != nil {
			t.Errorf("rank %d (child process): %v", c.Rank, err)
		}
	}
}
