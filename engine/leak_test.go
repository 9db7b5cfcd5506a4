package engine_test

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors here: %v", err)
	}
	return len(ents)
}

// sharedMaps counts this process's mappings of boltmesh's shared memory:
// heaps, its own and its neighbours', and pipes.
func sharedMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("cannot read the mappings here: %v", err)
	}
	return strings.Count(string(b), "memfd:boltmesh")
}

// TestCloseReleasesEverything builds and closes meshes, with traffic and a
// barrier in between, and checks that no file descriptor is left open and
// no shared memory mapped (the ranks are neighbours: pipes and mapped
// heaps).
// Goroutine leaks are caught by goleak in TestMain.
func TestCloseReleasesEverything(t *testing.T) {
	before, maps := openFDs(t), sharedMaps(t)
	for range 3 {
		lns, addrs := listeners(t, 3)
		ts := make([]*engine.NetTransport, 3)
		errc := make(chan error, 3)
		for r := range ts {
			go func() {
				var err error
				ts[r], err = engine.FromListener(r, 3, lns[r], addrs, engine.Options{})
				errc <- err
			}()
		}
		for range ts {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		if err := ts[0].Send(2, 1, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		if _, err := ts[2].Recv(0, 1); err != nil {
			t.Fatal(err)
		}
		barrierAll(t, ts)
		for _, tr := range ts {
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for openFDs(t) > before && time.Now().Before(deadline) {
		runtime.GC() // closes fds of unreachable *os.File
		time.Sleep(10 * time.Millisecond)
	}
	if after := openFDs(t); after > before {
		t.Fatalf("%d file descriptors open after closing, %d before", after, before)
	}
	if after := sharedMaps(t); after != maps {
		t.Fatalf("%d mappings of shared memory after closing, %d before", after, maps)
	}
}

// TestKilledNeighbourReleases: a neighbour SIGKILLed while messages to it
// are under way (its pipe full) is lost promptly, and once this rank
// closes, none of the pair's descriptors or mappings is left.
func TestKilledNeighbourReleases(t *testing.T) {
	lns, addrs := listeners(t, 2)
	child := startChild(t, "heap-idle", 1, lns[1], addrs)
	before, maps := openFDs(t), sharedMaps(t) // with the child's output pipes, and rank 0's listener
	tr, err := engine.FromListener(0, 2, lns[0], addrs, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Topology().Neighbours(); len(got) != 1 {
		t.Fatalf("Topology().Neighbours = %v, want [1]", got)
	}
	if sharedMaps(t) <= maps {
		t.Fatal("no shared memory mapped between neighbours")
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() { // more than its pipe holds: it blocks until the loss
		for {
			if err := tr.Send(1, 5, make([]byte, 256<<10)); err != nil {
				sent <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sent:
		requirePeerLost(t, err, 1)
	case <-time.After(lostWithin):
		t.Fatalf("a send to a killed neighbour still blocked %v after", lostWithin)
	}
	t.Logf("loss noticed after %v", time.Since(killed))
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	deadline := time.Now().Add(2 * time.Second)
	for (openFDs(t) > before || sharedMaps(t) != maps) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if after := openFDs(t); after > before {
		t.Errorf("%d file descriptors open after closing, %d before", after, before)
	}
	if after := sharedMaps(t); after != maps {
		t.Errorf("%d mappings of shared memory after closing, %d before", after, maps)
	}
}
