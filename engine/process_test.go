package engine_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// Child processes: the test binary re-executes itself with these variables
// set, and TestMain runs the role instead of the tests. The child's
// listener is inherited as fd 3.
const (
	childRoleEnv  = "BOLTMESH_TEST_ROLE"
	childRankEnv  = "BOLTMESH_TEST_RANK"
	childAddrsEnv = "BOLTMESH_TEST_ADDRS"
	// set when the child inherits a listener as fd 3
	childListenerEnv = "BOLTMESH_TEST_LISTENER"
)

// Exchange parameters shared by parent and children.
const procTags, procMsgs, procMax = 2, 4, 8 << 20

// floodTag and floodSize describe the messages the "flood" role sends to
// rank 0 until it is killed.
const floodTag, floodSize = 1, 64 << 20

func runChild(role string) error {
	rank, err := strconv.Atoi(os.Getenv(childRankEnv))
	if err != nil {
		return err
	}
	addrs := strings.Split(os.Getenv(childAddrsEnv), ",")
	var ln net.Listener
	if os.Getenv(childListenerEnv) != "" {
		if ln, err = net.FileListener(os.NewFile(3, "listener")); err != nil {
			return err
		}
	}
	if role == "emfile" {
		return runEmfileChild(addrs, ln)
	}
	if strings.HasPrefix(role, "bench-") {
		return runBenchChild(role, rank, addrs, ln)
	}
	if role == "star-worker" { // dials the coordinator at addrs[0], then idles until killed
		t, err := engine.WorkerDial(rank, len(addrs), addrs[0], engine.Options{})
		if err != nil {
			return err
		}
		defer t.Close()
		_, err = t.Recv(0, heapIdleTag)
		return err
	}
	var opts engine.Options
	if role == "flood-rts" {
		opts.EagerMax = 1 << 10
	}
	t, err := engine.FromListener(rank, len(addrs), ln, addrs, opts)
	if err != nil {
		return err
	}
	defer t.Close()
	switch role {
	case "exchange":
		if err := exchange(t, procTags, procMsgs, procMax); err != nil {
			return err
		}
		return t.Barrier()
	case "heap-idle": // joins the mesh and then only serves its heap until killed
		_, err := t.Recv(0, heapIdleTag)
		return err
	case "flood-posted-other", "flood-empty", "flood-small", "flood-tags", "flood-rpc", "flood-rts", "flood-mix":
		return runFloodChild(t, role)
	case "flood":
		buf := pattern(rank, 0, floodTag, 0, floodSize)
		for {
			if err := t.Send(0, floodTag, buf); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("unknown role %q", role)
}

// startChild runs rank as a child process with the given role; the
// listener is passed down and closed here.
func startChild(t testing.TB, role string, rank int, ln net.Listener, addrs []string) *exec.Cmd {
	return startChildEnv(t, role, rank, ln, addrs, nil)
}

// startChildEnv is startChild with extra environment variables; ln may be
// nil. The child is killed and reaped at cleanup if still running.
func startChildEnv(t testing.TB, role string, rank int, ln net.Listener, addrs, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childRankEnv+"="+strconv.Itoa(rank), childAddrsEnv+"="+strings.Join(addrs, ","))
	cmd.Env = append(cmd.Env, env...)
	if ln != nil {
		f, err := ln.(*net.TCPListener).File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ln.Close()
		cmd.ExtraFiles = []*os.File{f}
		cmd.Env = append(cmd.Env, childListenerEnv+"=1")
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func TestMeshAllPairsProcesses(t *testing.T) {
	const ranks = 4
	lns, addrs := listeners(t, ranks)
	cmds := make([]*exec.Cmd, 0, ranks-1)
	for r := 1; r < ranks; r++ {
		cmds = append(cmds, startChild(t, "exchange", r, lns[r], addrs))
	}
	tr, err := engine.FromListener(0, ranks, lns[0], addrs, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := exchange(tr, procTags, procMsgs, procMax); err != nil {
		t.Fatal(err)
	}
	if err := tr.Barrier(); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("rank %d: %v", i+1, err)
		}
	}
}
