package collective_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// Child processes: the test binary re-executes itself with these variables
// set, and TestMain runs the role instead of the tests. The child's
// listener is inherited as fd 3; its stdin is a pipe whose write end the
// parent holds, so that a child waiting on it exits when the parent dies.
const (
	procRoleEnv  = "BOLTMESH_COLL_TEST_ROLE"
	procRankEnv  = "BOLTMESH_COLL_TEST_RANK"
	procAddrsEnv = "BOLTMESH_COLL_TEST_ADDRS"
)

// procOpts are the transport options of every rank of these tests: a small
// symmetric heap, as the collectives do not use it.
var procOpts = engine.Options{HeapSize: 1 << 20}

// procRunChild runs one child role; a non-nil error makes the child exit 1.
func procRunChild(role string) error {
	rank, err := strconv.Atoi(os.Getenv(procRankEnv))
	if err != nil {
		return err
	}
	addrs := strings.Split(os.Getenv(procAddrsEnv), ",")
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
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
type procChild struct {
	rank  int
	cmd   *exec.Cmd
	stdin *os.File // write end of the child's stdin
	done  chan struct{}
	err   error // cmd.Wait's, once done is closed
}

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
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ln.Close()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinR.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), procRoleEnv+"="+role, procRankEnv+"="+strconv.Itoa(rank), procAddrsEnv+"="+strings.Join(addrs, ","))
	cmd.Env = append(cmd.Env, env...)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		stdinW.Close()
		t.Fatal(err)
	}
	c := &procChild{rank: rank, cmd: cmd, stdin: stdinW, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.done:
		default:
			cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits up to timeout for the child to exit and returns its error
// (an *exec.ExitError for a non-zero exit); a child still running after
// timeout is killed.
func (c *procChild) wait(timeout time.Duration) error {
	select {
	case <-c.done:
		return c.err
	case <-time.After(timeout):
		c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("rank %d did not exit within %v", c.rank, timeout)
	}
}

// procWaitAll waits for every child and reports each failure.
func procWaitAll(t testing.TB, children []*procChild, timeout time.Duration) {
	t.Helper()
	for _, c := range children {
		if err := c.wait(timeout); err != nil {
			t.Errorf("rank %d (child process): %v", c.rank, err)
		}
	}
}
