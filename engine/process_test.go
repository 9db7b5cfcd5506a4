package engine_test

import (
	"fmt"
	"net"
	"slices"
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
	if role == "flood-rts" || role == "flood-rts-tags-window" {
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
	case "flood-posted-other", "flood-empty", "flood-small", "flood-tags", "flood-rpc", "flood-rts", "flood-mix", "flood-rpc-window", "flood-tags-window", "flood-rts-tags-window":
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

// TestMeshAllPairsProcesses: 2, 3 and 4 ranks, each a process, every
// ordered pair exchanging sizes from 0 B to 8 MiB on several tags from
// several goroutines, bytes and order verified: neighbours over shared
// memory, and in a world of two emulated hosts (BOLTMESH_HOST_ID), where
// ranks 0 and 1 share one host and the others the other.
func TestMeshAllPairsProcesses(t *testing.T) {
	for _, c := range []struct {
		name  string
		ranks int
		hosts []string // BOLTMESH_HOST_ID of each rank; nil: one host
		want  []int    // rank 0's neighbours
	}{
		{"shm/2", 2, nil, []int{1}},
		{"shm/3", 3, nil, []int{1, 2}},
		{"shm/4", 4, nil, []int{1, 2, 3}},
		{"two hosts/4", 4, []string{"a", "a", "b", "b"}, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lns, addrs := listeners(t, c.ranks)
			host := func(r int) string {
				if c.hosts == nil {
					return ""
				}
				return c.hosts[r]
			}
			cmds := make([]*childproc.Proc, 0, c.ranks-1)
			for r := 1; r < c.ranks; r++ {
				var env []string
				if h := host(r); h != "" {
					env = append(env, "BOLTMESH_HOST_ID="+h)
				}
				cmds = append(cmds, startChildEnv(t, "exchange", r, lns[r], addrs, env))
			}
			tr, err := engine.FromListener(0, c.ranks, lns[0], addrs, engine.Options{HostID: host(0)})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if got := tr.Topology().Neighbours(); !slices.Equal(got, c.want) {
				t.Errorf("rank 0's neighbours %v, want %v", got, c.want)
			}
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
		})
	}
}
