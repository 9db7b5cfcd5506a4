package collective_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// closedComms builds an n-rank mesh and a Comm per rank.
func closedComms(t *testing.T, n int) ([]*engine.NetTransport, []*collective.Comm) {
	ts := meshtest.Mesh(t, n, engine.Options{HeapSize: 1 << 20})
	cs := make([]*collective.Comm, n)
	for r := range n {
		cs[r] = mustNew(t, ts[r], collective.Options{})
	}
	return ts, cs
}

// awaitAll waits for k results, failing the test if one takes longer than
// d: a collective must end, with its result or an error, not hang.
func awaitAll(t *testing.T, res <-chan error, k int, d time.Duration) []error {
	t.Helper()
	var errs []error
	for range k {
		select {
		case err := <-res:
			errs = append(errs, err)
		case <-time.After(d):
			t.Fatalf("a collective still blocked %v after a rank closed", d)
		}
	}
	return errs
}

// TestCollectiveAfterPeerClosed: a rank that closes its transport in order
// fails every later collective on every other rank with ErrPeerLost,
// including the ranks that never exchange with it
// directly, which would otherwise wait for a part that never comes.
func TestCollectiveAfterPeerClosed(t *testing.T) {
	for _, n := range []int{3, 4, 5, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ts, cs := closedComms(t, n)
			ts[n-1].Close()
			res := make(chan error, n)
			for r := range n - 1 {
				go func() { res <- collective.AllReduce(cs[r], make([]float32, 5), collective.Sum) }()
			}
			for _, err := range awaitAll(t, res, n-1, 5*time.Second) {
				if !errors.Is(err, engine.ErrPeerLost) {
					t.Errorf("got %v, want ErrPeerLost", err)
				}
			}
		})
	}
}

// TestCollectivePeerClosesAfterCall: a rank that closes as soon as its
// part of a collective is done (its call returned) does not fail that
// collective on the ranks still finishing it: its GOODBYE says it
// completed the call. Repeated, so that the GOODBYE often overtakes the
// last messages the others wait for.
func TestCollectivePeerClosesAfterCall(t *testing.T) {
	const n, rounds = 3, 25
	for i := range rounds {
		ts, cs := closedComms(t, n)
		res := make(chan error, n)
		sums := make([][]float32, n)
		for r := range n {
			sums[r] = []float32{float32(r), 1, float32(i)}
			go func() {
				err := collective.AllReduce(cs[r], sums[r], collective.Sum)
				if r == n-1 {
					ts[r].Close()
				}
				res <- err
			}()
		}
		for _, err := range awaitAll(t, res, n, 5*time.Second) {
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		for r := range n {
			if want := []float32{3, 3, float32(3 * i)}; fmt.Sprint(sums[r]) != fmt.Sprint(want) {
				t.Fatalf("round %d, rank %d: %v, want %v", i, r, sums[r], want)
			}
		}
	}
}
