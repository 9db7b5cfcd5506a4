package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// TestFormationErrorCountsRanks: a rank whose higher ranks do not all
// join within DialTimeout says how many ranks joined, counting ranks, not
// connections (a pair has Streams+1), and names those that did not: one
// that never came, and one that joined only some of its streams.
func TestFormationErrorCountsRanks(t *testing.T) {
	const world = 4
	lns, addrs := listeners(t, world)
	opts := engine.Options{Streams: 2, DialTimeout: 2 * time.Second, MeshKey: rawFuzzKey, Logger: discardLogger}
	lns[2].Close()
	lns[3].Close()
	go func() { // rank 1 joins rank 0 whole, then waits for ranks 2 and 3 in vain
		if tr, err := engine.FromListener(1, world, lns[1], addrs, opts); err == nil {
			tr.Close()
		}
	}()
	// Rank 2 joins one of its 3 streams; rank 3 never comes.
	raw := make(chan error, 1)
	go func() {
		c, err := rawDial(addrs[0], 2, 0, world, 0, 2, false)
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		raw <- err
	}()
	_, err := engine.FromListener(0, world, lns[0], addrs, opts)
	if err := <-raw; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("formation: %v, want a DeadlineExceeded", err)
	}
	if want := "1 of 3 higher ranks joined within 2s (not joined: 2 (1 of 3 streams), 3)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("formation: %v\nwant it to say %q", err, want)
	}
}
