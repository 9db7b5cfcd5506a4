package collective

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/internal/shm"
)

// peerReadPair is two neighbours (one process: each reads the other's
// memory out of this one) and a Comm over each with opts.
func peerReadPair(t *testing.T, opts Options) []*Comm {
	t.Helper()
	if !shm.CanReadProcess {
		t.Skip("no process_vm_readv on this system")
	}
	ts := meshtest.Mesh(t, 2, engine.Options{})
	if got := ts[0].Neighbours(); len(got) != 1 {
		t.Fatalf("Neighbours() = %v: the test needs shared memory", got)
	}
	cs := []*Comm{commOf(ts[0], opts), commOf(ts[1], opts)}
	for _, c := range cs {
		if !c.usePeerRead(2, PeerReadMin, PeerReadMin) {
			t.Fatal("two neighbours do not take AlgorithmPeerRead")
		}
	}
	return cs
}

// both runs f(rank) on both ranks at once and joins their errors.
func both(f func(r int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// peerReadCase reduces random data of n elements of T with op on both
// ranks and checks that both end with the bits of the same reduction
// done here.
func peerReadCase[T Elem](cs []*Comm, n int, op Op, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	in := [2][]T{make([]T, n), make([]T, n)}
	for r := range 2 {
		for i := range in[r] {
			in[r][i] = T(rng.IntN(2000) - 1000)
		}
	}
	want := append([]T(nil), in[0]...)
	Reduce(want, in[1], op)
	Finish(want, op, 2)
	err := both(func(r int) error { return AllReduce(cs[r], in[r], op) })
	if err != nil {
		return err
	}
	for r := range 2 {
		if !bytes.Equal(AsBytes(in[r]), AsBytes(want)) {
			return fmt.Errorf("%T %v %d elements: rank %d ends with other bits than the reduction", want, op, n, r)
		}
	}
	return nil
}

// TestPeerReadAllReduce: between two neighbours, AlgorithmAuto takes
// AlgorithmPeerRead from PeerReadMin bytes on, agrees that it works in
// the first such call, and every element type, reduction and length
// (odd ones, one piece or many, halves that split an element count
// unevenly) ends with the same bits on both ranks as the reduction made
// here; with no allocation per call.
func TestPeerReadAllReduce(t *testing.T) {
	cs := peerReadPair(t, Options{})
	seed := uint64(1)
	for _, n := range []int{PeerReadMin/4 - 1, PeerReadMin / 4, PeerReadMin/4 + 1, 3*peerReadChunk/8 + 1, 1<<18 + 7, 3<<20 + 5} {
		for _, op := range []Op{Sum, Mean, Max, Min, Prod} {
			seed++
			for _, err := range []error{
				peerReadCase[float32](cs, n, op, seed),
				peerReadCase[float64](cs, n, op, seed),
				peerReadCase[int32](cs, n, op, seed),
				peerReadCase[int64](cs, n, op, seed),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for r, c := range cs {
		if c.pr.agreed != prYes {
			t.Errorf("rank %d: agreed %d, want prYes", r, c.pr.agreed)
		}
	}
	data := [2][]float32{make([]float32, 1<<18), make([]float32, 1<<18)}
	var calls sync.WaitGroup
	start, done := make(chan struct{}), make(chan error, 1)
	calls.Go(func() {
		for range start {
			done <- AllReduce(cs[1], data[1], Sum)
		}
	})
	allocs := testing.AllocsPerRun(20, func() {
		start <- struct{}{}
		if err := errors.Join(AllReduce(cs[0], data[0], Sum), <-done); err != nil {
			t.Fatal(err)
		}
	})
	close(start)
	calls.Wait()
	if allocs != 0 {
		t.Errorf("a 1 MiB AlgorithmPeerRead allreduce allocates %v times a call", allocs)
	}
}

// refusedRead is a transport's peer reads, refused: as where the kernel
// forbids them.
type refusedRead struct{ plumb.CollPeerRead }

func (refusedRead) ReadPeer(int, uintptr, []byte) error { return engine.ErrPeerRead }

// TestPeerReadRefused: where one rank cannot read the other's memory,
// the first call that could use AlgorithmPeerRead finds it on both ranks
// and ends right by the ring, and every later one takes the ring from
// the start; forcing AlgorithmPeerRead then is AlgorithmAuto's choice.
func TestPeerReadRefused(t *testing.T) {
	cs := peerReadPair(t, Options{})
	cs[1].peers = refusedRead{cs[1].peers}
	for k := range 3 {
		if err := peerReadCase[float32](cs, 1<<18+1, Sum, uint64(k)); err != nil {
			t.Fatalf("call %d: %v", k, err)
		}
		for r, c := range cs {
			if c.pr.agreed != prNo {
				t.Fatalf("call %d: rank %d agreed %d, want prNo", k, r, c.pr.agreed)
			}
			if got, _ := c.allReduceAlgo(2, 1<<20); got != AlgorithmRing {
				t.Fatalf("call %d: rank %d now takes %v for 1 MiB, want the ring", k, r, got)
			}
		}
	}
	cs[0].opts.Algorithm = AlgorithmPeerRead
	if got, _ := cs[0].allReduceAlgo(2, 1<<20); got != AlgorithmRing {
		t.Errorf("AlgorithmPeerRead, refused: %v, want the ring", got)
	}
}

// TestPeerReadLengthsDiffer: ranks whose lengths differ fail with
// ErrLengthMismatch, whether both take AlgorithmPeerRead or only one
// does, and the next call works.
func TestPeerReadLengthsDiffer(t *testing.T) {
	cs := peerReadPair(t, Options{})
	for _, lens := range [][2]int{{1 << 18, 1<<18 + 1}, {1 << 18, 1 << 10}} {
		err := both(func(r int) error { return AllReduce(cs[r], make([]float32, lens[r]), Sum) })
		if !errors.Is(err, ErrLengthMismatch) && !errors.Is(err, ErrMismatch) {
			t.Errorf("lengths %v: %v, want a length mismatch", lens, err)
		}
		if err := peerReadCase[float32](cs, 1<<18, Sum, 9); err != nil {
			t.Fatalf("after lengths %v: %v", lens, err)
		}
	}
}
