package heap_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/boltmesh/boltmesh/heap"
)

func TestAllocAlignment(t *testing.T) {
	h := newHeap(t, 1<<20)
	base := uintptr(unsafe.Pointer(&h.Region()[0]))
	for _, align := range []uint64{0, 1, 2, 8, 64, 256, 4096, 1 << 16} {
		t.Run(fmt.Sprint(align), func(t *testing.T) {
			mustAlloc(t, h, 1, 1) // misalign the next free offset
			b := mustAlloc(t, h, 3, align)
			want := align
			if want == 0 {
				want = heap.DefaultAlign
			}
			if b.Offset%want != 0 || b.Len != 3 {
				t.Fatalf("Alloc(3, %d) = %+v, want offset aligned to %d", align, b, want)
			}
			if want <= 4096 { // within a page, addresses align like offsets
				p, err := h.Bytes(b)
				if err != nil {
					t.Fatal(err)
				}
				if addr := uintptr(unsafe.Pointer(&p[0])); uint64(addr)%want != 0 || addr-base != uintptr(b.Offset) {
					t.Fatalf("address %#x (base %#x) not aligned to %d", addr, base, want)
				}
			}
		})
	}
}

func TestAllocFirstFit(t *testing.T) {
	h := newHeap(t, 1<<16)
	a := mustAlloc(t, h, 100, 1)
	b := mustAlloc(t, h, 200, 1)
	c := mustAlloc(t, h, 100, 1)
	d := mustAlloc(t, h, 300, 1)
	want := []heap.Buffer{{0, 100}, {100, 200}, {300, 100}, {400, 300}}
	if got := []heap.Buffer{a, b, c, d}; !slices.Equal(got, want) {
		t.Fatalf("first allocations %v, want %v", got, want)
	}
	mustFree(t, h, b)
	mustFree(t, h, d)
	// 250 bytes do not fit the 200-byte hole at 100: they go to 400.
	if got := mustAlloc(t, h, 250, 1); got != (heap.Buffer{400, 250}) {
		t.Fatalf("Alloc(250) = %+v, want {400 250}", got)
	}
	// 50 bytes fit the lowest hole, at 100, not the one after 650.
	if got := mustAlloc(t, h, 50, 1); got != (heap.Buffer{100, 50}) {
		t.Fatalf("Alloc(50) = %+v, want {100 50}", got)
	}
	// Aligned to 64, the rest of the hole [150, 300) starts at 192.
	if got := mustAlloc(t, h, 100, 64); got != (heap.Buffer{192, 100}) {
		t.Fatalf("Alloc(100, 64) = %+v, want {192 100}", got)
	}
	// The padding [150, 192) is still free.
	if got := mustAlloc(t, h, 42, 1); got != (heap.Buffer{150, 42}) {
		t.Fatalf("Alloc(42) = %+v, want {150 42}", got)
	}
}

// op is one step of a random Alloc/Free sequence.
type op struct {
	free        bool   // Free live[pick % len(live)] instead of Alloc
	pick        int    // which live buffer to free
	size, align uint64 // Alloc arguments
}

// randomOps returns n random operations for a heap of heapSize bytes.
func randomOps(seed uint64, n int, heapSize uint64) []op {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ops := make([]op, n)
	for i := range ops {
		ops[i] = op{
			free:  r.IntN(5) < 2,
			pick:  r.IntN(1 << 20),
			size:  1 + r.Uint64N(heapSize/16),
			align: []uint64{0, 1, 8, 64, 512, 4096}[r.IntN(6)],
		}
	}
	return ops
}

// run applies ops to h and returns the Buffer or error each step produced.
func run(t *testing.T, h *heap.Heap, ops []op) []string {
	t.Helper()
	var live []heap.Buffer
	trace := make([]string, 0, len(ops))
	for _, o := range ops {
		if o.free && len(live) > 0 {
			i := o.pick % len(live)
			mustFree(t, h, live[i])
			trace = append(trace, fmt.Sprint("free ", live[i]))
			live = slices.Delete(live, i, i+1)
			continue
		}
		b, err := h.Alloc(o.size, o.align)
		if err == nil {
			live = append(live, b)
		}
		trace = append(trace, fmt.Sprint(b, err))
	}
	return trace
}

func TestAllocDeterministic(t *testing.T) {
	const size = 1 << 20
	for seed := range uint64(5) {
		ops := randomOps(seed, 2000, size)
		a := run(t, newHeap(t, size), ops)
		b := run(t, newHeap(t, size), ops)
		if i := slices.Compare(a, b); i != 0 {
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("seed %d step %d: heap A %s, heap B %s", seed, j, a[j], b[j])
				}
			}
		}
	}
}

// firstFit is the model: the lowest aligned offset at which size bytes fit
// in a gap between the live buffers (sorted by offset) of a heap of n bytes.
func firstFit(live []heap.Buffer, n, size, align uint64) (uint64, bool) {
	start := uint64(0)
	for i := 0; i <= len(live); i++ {
		end := n
		if i < len(live) {
			end = live[i].Offset
		}
		off := (start + align - 1) &^ (align - 1)
		if off <= end && end-off >= size {
			return off, true
		}
		if i < len(live) {
			start = live[i].Offset + live[i].Len
		}
	}
	return 0, false
}

func TestAllocModel(t *testing.T) {
	const size = 1 << 18
	h := newHeap(t, size)
	var live []heap.Buffer // sorted by offset
	fill := map[heap.Buffer]byte{}
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 20000 {
		if r.IntN(2) == 0 && len(live) > 0 {
			i := r.IntN(len(live))
			b := live[i]
			p, err := h.Bytes(b)
			if err != nil {
				t.Fatalf("step %d: Bytes(%+v): %v", step, b, err)
			}
			if n := bytes.Count(p, []byte{fill[b]}); n != len(p) {
				t.Fatalf("step %d: %+v holds %d of %d bytes %d: corrupted", step, b, n, len(p), fill[b])
			}
			mustFree(t, h, b)
			live = slices.Delete(live, i, i+1)
			delete(fill, b)
		} else {
			n := 1 + r.Uint64N(size/8)
			align := uint64(1) << r.IntN(13)
			want, fits := firstFit(live, size, n, align)
			b, err := h.Alloc(n, align)
			if !fits {
				if !errors.Is(err, heap.ErrNoSpace) {
					t.Fatalf("step %d: Alloc(%d, %d) = %+v, %v; model: no space", step, n, align, b, err)
				}
				continue
			}
			if err != nil || b != (heap.Buffer{want, n}) {
				t.Fatalf("step %d: Alloc(%d, %d) = %+v, %v; model: offset %d", step, n, align, b, err, want)
			}
			i, _ := slices.BinarySearchFunc(live, b.Offset, func(x heap.Buffer, off uint64) int {
				return cmp.Compare(x.Offset, off)
			})
			live = slices.Insert(live, i, b)
			p, err := h.Bytes(b)
			if err != nil {
				t.Fatal(err)
			}
			fill[b] = byte(step) | 1
			p[0] = fill[b]
			for j := 1; j < len(p); j *= 2 {
				copy(p[j:], p[:j])
			}
		}
		for i := 1; i < len(live); i++ {
			if overlaps(live[i-1], live[i]) || live[i].Offset+live[i].Len > size {
				t.Fatalf("step %d: live %+v and %+v overlap or leave the heap", step, live[i-1], live[i])
			}
		}
		if step%97 == 0 {
			checkFreeList(t, h, live)
		}
	}
	checkFreeList(t, h, live)
}

func TestCoalesce(t *testing.T) {
	orders := map[string]func([]heap.Buffer){
		"ascending":  func([]heap.Buffer) {},
		"descending": func(b []heap.Buffer) { slices.Reverse(b) },
		"evens-then-odds": func(b []heap.Buffer) {
			var even, odd []heap.Buffer
			for i, x := range b {
				if i%2 == 0 {
					even = append(even, x)
				} else {
					odd = append(odd, x)
				}
			}
			copy(b, append(even, odd...))
		},
		"random": func(b []heap.Buffer) {
			r := rand.New(rand.NewPCG(7, 7))
			r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			h := newHeap(t, 1<<16)
			var bufs []heap.Buffer
			for i := uint64(0); ; i++ {
				b, err := h.Alloc(1+i%200, 1<<(i%8))
				if err != nil {
					break
				}
				bufs = append(bufs, b)
			}
			order(bufs)
			for _, b := range bufs {
				mustFree(t, h, b)
			}
			if n := len(h.FreeSpans()); n != 1 {
				t.Fatalf("free list has %d spans after freeing everything: %v", n, h.FreeSpans())
			}
			if b := mustAlloc(t, h, h.Size(), 1); b != (heap.Buffer{0, h.Size()}) {
				t.Fatalf("Alloc(Size) = %+v", b)
			}
			if h.InUse() != h.Size() {
				t.Fatalf("InUse = %d, want %d", h.InUse(), h.Size())
			}
		})
	}
}

func TestAllocConcurrent(t *testing.T) {
	h := newHeap(t, 1<<20)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				b, err := h.Alloc(uint64(1+(i*g)%1000), 0)
				if err != nil {
					t.Errorf("Alloc: %v", err)
					return
				}
				p, err := h.Bytes(b)
				if err != nil {
					t.Errorf("Bytes: %v", err)
					return
				}
				for j := range p {
					p[j] = byte(g)
				}
				for j := range p {
					if p[j] != byte(g) {
						t.Errorf("goroutine %d: buffer %+v shared with another", g, b)
						return
					}
				}
				if err := h.Free(b); err != nil {
					t.Errorf("Free: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if h.InUse() != 0 || len(h.FreeSpans()) != 1 {
		t.Fatalf("after concurrent use: InUse %d, free list %v", h.InUse(), h.FreeSpans())
	}
}
