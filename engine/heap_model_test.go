package engine_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// heapRandSize returns a random transfer size up to max: empty, tiny,
// small, medium and large ones.
func heapRandSize(r *rand.Rand, max int) int {
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return r.IntN(min(max, 64) + 1)
	case 2:
		return r.IntN(min(max, 64<<10) + 1)
	case 3, 4:
		return r.IntN(min(max, 1<<20) + 1)
	default:
		return r.IntN(max + 1)
	}
}

// TestHeapModel checks random one-sided traffic among four ranks against
// an in-memory model of every rank's heap. In each phase every writer
// (rank, goroutine) owns two regions of the buffer, on rotating target
// ranks (itself included), puts only there and gets back only what it
// wrote itself; after the phase's barrier every rank reads every heap.
func TestHeapModel(t *testing.T) {
	const (
		ranks    = 4
		workers  = 3 // goroutines per rank
		bufSize  = 48 << 20
		region   = 8 << 20 // a writer's region on one target
		regions  = ranks * bufSize / region
		writers  = ranks * workers
		phases   = 3
		opsPhase = 10
		maxXfer  = 8 << 20
	)
	if regions != 2*writers {
		t.Fatal("regions must split evenly between writers")
	}
	start := time.Now()
	ts := newMesh(t, ranks, engine.Options{HeapSize: 64 << 20})
	watchdog(t, 60*time.Second, ts...)
	bufs := make([]engine.SymmetricBuffer, ranks)
	var wg sync.WaitGroup
	errs := make([]error, ranks)
	for r, tr := range ts {
		wg.Go(func() { bufs[r], errs[r] = tr.Alloc(bufSize, 0) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Alloc: %v", r, err)
		}
		if bufs[r] != bufs[0].On(r) {
			t.Fatalf("rank %d got %+v, rank 0 %+v", r, bufs[r], bufs[0])
		}
	}
	buf := bufs[0]
	views := make([][]byte, ranks)
	model := make([][]byte, ranks)
	for r, tr := range ts {
		v, err := tr.Bytes(bufs[r])
		if err != nil {
			t.Fatal(err)
		}
		views[r], model[r] = v, make([]byte, bufSize)
		if i := nonZero(v); i >= 0 {
			t.Fatalf("rank %d: fresh buffer has byte %d set", r, i)
		}
	}
	// Put sources are slices of one random pool at random offsets.
	pool := make([]byte, 2*maxXfer)
	prng := rand.New(rand.NewPCG(1, 2))
	for i := range pool {
		pool[i] = byte(prng.Uint32())
	}
	// at names n bytes at offset off of the buffer on rank.
	at := func(rank, off, n int) engine.SymmetricBuffer {
		return engine.SymmetricBuffer{Rank: rank, Offset: buf.Offset + uint64(off), Len: uint64(n)}
	}
	type span struct{ target, off, n int }

	for phase := range phases {
		// Writer w owns regions k with owner(k) == w in this phase.
		owned := make([][]span, writers)
		for k := range regions {
			w := (k + 7*phase) % regions / 2
			owned[w] = append(owned[w], span{k / (bufSize / region), k % (bufSize / region) * region, region})
		}
		werrs := make([]error, writers)
		for w := range writers {
			rank := w / workers
			tr := ts[rank]
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(phase), uint64(w)))
				dst := make([]byte, maxXfer)
				fail := func(format string, args ...any) {
					if werrs[w] == nil {
						werrs[w] = fmt.Errorf("phase %d rank %d writer %d: %s", phase, rank, w, fmt.Sprintf(format, args...))
					}
				}
				// pick returns a random range inside one of w's regions.
				pick := func() span {
					reg := owned[w][rng.IntN(len(owned[w]))]
					n := heapRandSize(rng, maxXfer)
					off := reg.off + rng.IntN(region-n+1)
					return span{reg.target, off, n}
				}
				src := func(n int) []byte {
					s := rng.IntN(len(pool) - n + 1)
					return pool[s : s+n]
				}
				var written []span // settled ranges to read back
				for op := range opsPhase {
					if werrs[w] != nil {
						return
					}
					switch rng.IntN(5) {
					case 0: // Put
						s := pick()
						p := src(s.n)
						if err := tr.Put(at(s.target, s.off, s.n), p); err != nil {
							fail("op %d put %+v: %v", op, s, err)
							continue
						}
						copy(model[s.target][s.off:], p)
						written = append(written, s)
					case 1: // a batch of PutNB, then Wait each
						var reqs []engine.Request
						var spans []span
						for range 1 + rng.IntN(4) {
							s := pick()
							p := src(s.n)
							r, err := tr.PutNB(at(s.target, s.off, s.n), p)
							if err != nil {
								fail("op %d putnb %+v: %v", op, s, err)
								break
							}
							reqs, spans = append(reqs, r), append(spans, s)
							// Puts on one connection land in issue order.
							copy(model[s.target][s.off:], p)
						}
						for i := range reqs {
							if err := reqs[i].Wait(); err != nil {
								fail("op %d putnb wait %+v: %v", op, spans[i], err)
							}
						}
						written = append(written, spans...)
					case 2: // Quiet, then the targets hold what this writer put
						if err := tr.Quiet(); err != nil {
							fail("op %d quiet: %v", op, err)
							continue
						}
						for _, s := range written {
							if !bytes.Equal(views[s.target][s.off:s.off+s.n], model[s.target][s.off:s.off+s.n]) {
								fail("op %d: after Quiet, rank %d's heap does not hold the put of %d bytes at %d", op, s.target, s.n, s.off)
							}
						}
					case 3: // Get a range of an owned region
						s := pick()
						if err := tr.Get(at(s.target, s.off, s.n), dst[:s.n]); err != nil {
							fail("op %d get %+v: %v", op, s, err)
						} else if !bytes.Equal(dst[:s.n], model[s.target][s.off:s.off+s.n]) {
							fail("op %d get %+v: wrong data", op, s)
						}
					default: // a batch of GetNB into disjoint parts of dst
						var reqs []engine.Request
						var spans []span
						used := 0
						for range 1 + rng.IntN(4) {
							s := pick()
							s.n = min(s.n, maxXfer/4)
							r, err := tr.GetNB(at(s.target, s.off, s.n), dst[used:used+s.n])
							if err != nil {
								fail("op %d getnb %+v: %v", op, s, err)
								break
							}
							reqs, spans = append(reqs, r), append(spans, span{s.target, s.off, s.n})
							used += s.n
						}
						used = 0
						for i := range reqs {
							s := spans[i]
							if err := reqs[i].Wait(); err != nil {
								fail("op %d getnb wait %+v: %v", op, s, err)
							} else if !bytes.Equal(dst[used:used+s.n], model[s.target][s.off:s.off+s.n]) {
								fail("op %d getnb %+v: wrong data", op, s)
							}
							used += s.n
						}
					}
				}
			})
		}
		wg.Wait()
		for _, err := range werrs {
			if err != nil {
				t.Error(err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		barrierAll(t, ts)

		// Every rank reads random ranges of every heap.
		rerrs := make([]error, ranks)
		for r, tr := range ts {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(phase), uint64(100+r)))
				dst := make([]byte, maxXfer)
				for target := range ranks {
					for range 3 {
						n := heapRandSize(rng, maxXfer)
						off := rng.IntN(bufSize - n + 1)
						if err := tr.Get(at(target, off, n), dst[:n]); err != nil {
							rerrs[r] = fmt.Errorf("phase %d rank %d: get %d bytes at %d from rank %d: %w", phase, r, n, off, target, err)
							return
						}
						if !bytes.Equal(dst[:n], model[target][off:off+n]) {
							rerrs[r] = fmt.Errorf("phase %d rank %d: get %d bytes at %d from rank %d: differs from the model", phase, r, n, off, target)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		for _, err := range rerrs {
			if err != nil {
				t.Error(err)
			}
		}
		for r := range ranks {
			if !bytes.Equal(views[r], model[r]) {
				i := 0
				for views[r][i] == model[r][i] {
					i++
				}
				t.Errorf("phase %d: rank %d's heap differs from the model from byte %d", phase, r, i)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		barrierAll(t, ts)
	}
	t.Logf("%d phases in %v", phases, time.Since(start))
}
