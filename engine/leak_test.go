package engine_test

import (
	"os"
	"runtime"
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

// TestCloseReleasesEverything builds and closes meshes, with traffic and a
// barrier in between, and checks that no file descriptor is left open.
// Goroutine leaks are caught by goleak in TestMain.
func TestCloseReleasesEverything(t *testing.T) {
	before := openFDs(t)
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
}
