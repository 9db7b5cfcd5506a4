package collective

import (
	"context"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// sentBytes is a rank's collective tag space that counts the bytes it
// sends to each rank.
type sentBytes struct {
	netHooks
	mu sync.Mutex
	to map[int]int
}

func (s *sentBytes) count(to, n int) {
	s.mu.Lock()
	s.to[to] += n
	s.mu.Unlock()
}

func (s *sentBytes) SendColl(ctx context.Context, to int, tag, meta uint32, p []byte) error {
	s.count(to, len(p))
	return s.netHooks.SendColl(ctx, to, tag, meta, p)
}

func (s *sentBytes) ExchangeColl(ctx context.Context, to, from int, tag, meta uint32, out, in []byte) (int, error) {
	s.count(to, len(out))
	return s.netHooks.ExchangeColl(ctx, to, from, tag, meta, out, in)
}

func (s *sentBytes) ExchangeCollChunks(ctx context.Context, to, from int, tag, meta uint32, out, in []byte, outChunk, inChunk int, onChunk func(off, n int) error) error {
	s.count(to, len(out))
	return s.netHooks.ExchangeCollChunks(ctx, to, from, tag, meta, out, in, outChunk, inChunk, onChunk)
}

// TestHalvingNearestFirst: Rabenseifner's reduce-scatter halves the
// message with the nearest rank first and the farthest last, so that
// where ranks of one host are numbered together (as launchers number
// them) the most bytes stay on the host and the fewest cross the link:
// with 8 ranks, 4 to a host, each rank sends its host's partners 1/2 and
// 1/4 of the message, twice (reduce-scatter, all-gather), and the other
// host 1/8, twice; farthest first, it sent the other host 1/2, twice.
// The sums are right either way.
func TestHalvingNearestFirst(t *testing.T) {
	const n, elems = 8, 1 << 14
	ts := meshtest.Mesh(t, n, engine.Options{})
	counters := make([]*sentBytes, n)
	errs := make([]error, n)
	data := make([][]float64, n)
	var wg sync.WaitGroup
	for r := range n {
		counters[r] = &sentBytes{netHooks: hooksOf(ts[r]), to: make(map[int]int)}
		c := newComm(ts[r], counters[r], Options{Algorithm: AlgorithmHalving})
		data[r] = make([]float64, elems)
		for i := range data[r] {
			data[r][i] = float64(r*elems + i)
		}
		wg.Go(func() { errs[r] = AllReduce(c, data[r], Sum) })
	}
	wg.Wait()
	for r := range n {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		for i, v := range data[r] {
			if want := float64(n*i + elems*n*(n-1)/2); v != want {
				t.Fatalf("rank %d element %d: %v, want %v", r, i, v, want)
			}
		}
	}
	size := elems * 8
	for r := range n {
		for d, share := range map[int]int{1: 2, 2: 4, 4: 8} {
			peer := r ^ d
			if got, want := counters[r].to[peer], 2*size/share; got != want {
				t.Errorf("rank %d sent rank %d (distance %d) %d bytes, want %d (2 x 1/%d of %d)", r, peer, d, got, want, share, size)
			}
		}
	}
}
