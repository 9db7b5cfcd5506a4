package engine_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/childproc"
)

// Exchange parameters shared by parent and children.
const procTags, procMsgs, procMax = 2, 4, 8 << 20

// floodTag and floodSize describe the messages the "flood" role sends to
// rank 0 until it is killed.
const floodTag, floodSize = 1, 64 << 20

// runChild runs the role of a child process (see startChild).
func runChild(c childproc.Child) error {
	role, rank, addrs, ln := c.Role, c.Rank, c.Addrs, c.Listener
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
func startChild(t testing.TB, role string, rank int, ln net.Listener, addrs []string) *childproc.Proc {
	return startChildEnv(t, role, rank, ln, addrs, nil)
}

// startChildEnv is startChild with extra environment variables; ln may be
// nil. The child is killed and reaped at cleanup if still running.
func startChildEnv(t testing.TB, role string, rank int, ln net.Listener, addrs, env []string) *childproc.Proc {
	t.Helper()
	return childproc.Start(t, childproc.Spec{Role: role, Rank: rank, Addrs: addrs, Listener: ln, Env: env})
}

func TestMeshAllPairsProcesses(t *testing.T) {
	const ranks = 4
	lns, addrs := listeners(t, ranks)
	cmds := make([]*childproc.Proc, 0, ranks-1)
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
