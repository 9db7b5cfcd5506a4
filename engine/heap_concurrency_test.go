package engine_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// concRanges lays out n distinct ranges of distinct sizes (one of them
// empty) in rank's buffer b, fills them there with distinct patterns and
// returns them.
func concRanges(t *testing.T, tr *engine.NetTransport, b engine.SymmetricBuffer, n, stride int) []engine.SymmetricBuffer {
	t.Helper()
	view, err := tr.Bytes(b)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]engine.SymmetricBuffer, n)
	for i := range rs {
		size := (i*40961 + 7) % stride
		if i == 3 {
			size = 0
		}
		off := i * stride
		fillPattern(view[off:off+size], tr.Rank(), 0, 0, i)
		rs[i] = engine.SymmetricBuffer{Rank: tr.Rank(), Offset: b.Offset + uint64(off), Len: uint64(size)}
	}
	return rs
}

func TestHeapConcurrentGets(t *testing.T) {
	const n, stride = 64, 256 << 10
	ts := watchedMesh(t, 2, engine.Options{HeapSize: 32 << 20})
	var bufs [2]engine.SymmetricBuffer
	for r, tr := range ts {
		var err error
		if bufs[r], err = tr.Alloc(n*stride, 0); err != nil {
			t.Fatal(err)
		}
	}
	rs := concRanges(t, ts[1], bufs[1], n, stride)

	// 64 goroutines, each getting its own ranges, several times over.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Go(func() {
			for k := range 4 {
				i := (g + k*17) % n
				dst := make([]byte, rs[i].Len)
				if err := ts[0].Get(rs[i], dst); err != nil {
					errs[g] = fmt.Errorf("goroutine %d: get %d: %w", g, i, err)
					return
				}
				if err := check(dst, 1, 0, 0, i, int(rs[i].Len)); err != nil {
					errs[g] = fmt.Errorf("goroutine %d: get %d: %w", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestHeapConcurrentGetNB(t *testing.T) {
	const n, stride, batch = 64, 256 << 10, 16
	ts := watchedMesh(t, 2, engine.Options{HeapSize: 32 << 20})
	var bufs [2]engine.SymmetricBuffer
	for r, tr := range ts {
		var err error
		if bufs[r], err = tr.Alloc(n*stride, 0); err != nil {
			t.Fatal(err)
		}
	}
	rs := concRanges(t, ts[1], bufs[1], n, stride)

	// One batch: start 16, then wait for all, in reverse order.
	runBatch := func(first int, reverse bool) error {
		reqs := make([]engine.Request, batch)
		dsts := make([][]byte, batch)
		for j := range batch {
			i := (first + j) % n
			dsts[j] = make([]byte, rs[i].Len)
			var err error
			if reqs[j], err = ts[0].GetNB(rs[i], dsts[j]); err != nil {
				for k := range j {
					reqs[k].Wait()
				}
				return fmt.Errorf("getnb %d: %w", i, err)
			}
		}
		var firstErr error
		for k := range batch {
			j := k
			if reverse {
				j = batch - 1 - k
			}
			i := (first + j) % n
			err := reqs[j].Wait()
			if err == nil {
				err = check(dsts[j], 1, 0, 0, i, int(rs[i].Len))
			}
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("getnb %d: %w", i, err)
			}
		}
		return firstErr
	}
	if err := runBatch(0, true); err != nil {
		t.Fatal(err)
	}
	// Several goroutines with batches in flight at once.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range errs {
		wg.Go(func() {
			for k := range 3 {
				if err := runBatch(g*batch/2+k*5, (g+k)%2 == 0); err != nil {
					errs[g] = fmt.Errorf("goroutine %d batch %d: %w", g, k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
