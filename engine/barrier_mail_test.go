package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestBarrierMail: between neighbours every barrier round goes through
// their mailbox's signal words (no frame), in worlds of 2 and 4 (rank XOR
// 2^k), with the default spin, with a rank late (the other sleeps and is
// woken), and with no spin at all; and a barrier orders puts: what a rank
// put into every other rank's heap before barrier k is there after it.
func TestBarrierMail(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		opts engine.Options
		late bool
	}{
		{"2/spin", 2, engine.Options{}, false},
		{"2/late", 2, engine.Options{Spin: 20 * time.Microsecond}, true},
		{"2/no spin", 2, engine.Options{Spin: -1}, false},
		{"4/spin", 4, engine.Options{}, false},
		{"4/late", 4, engine.Options{Spin: 20 * time.Microsecond}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.HeapSize = 1 << 16
			ts := newMesh(t, c.n, c.opts)
			if got := ts[0].Topology().Neighbours(); len(got) != c.n-1 {
				t.Fatalf("Topology().Neighbours = %v: the test needs shared memory", got)
			}
			bufs := make([]engine.SymmetricBuffer, c.n)
			for r := range c.n {
				b, err := ts[r].Alloc(uint64(8*c.n), 8)
				if err != nil {
					t.Fatal(err)
				}
				bufs[r] = b
			}
			var wg sync.WaitGroup
			errs := make([]error, c.n)
			const rounds = 200
			for r := range c.n {
				wg.Go(func() {
					errs[r] = barrierRounds(ts, bufs[r], r, rounds, c.late)
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for r := range c.n {
				for k := 0; 1<<k < c.n; k++ {
					q := r ^ 1<<k
					// Two barriers a round.
					if got, want := engine.BarrierSignalled(ts[r], q), engine.BarrierSignal(2*rounds, uint32(k)); got != want {
						t.Errorf("rank %d's last signal to %d: %#x, want %#x (every round through the mailbox)", r, q, got, want)
					}
				}
			}
		})
	}
}

// barrierRounds is rank r's part of TestBarrierMail: in round i it puts i
// into its slot of every rank's buffer b, meets the others at a barrier,
// and finds i from every rank in its own heap.
func barrierRounds(ts []*engine.NetTransport, b engine.SymmetricBuffer, r, rounds int, late bool) error {
	n := len(ts)
	var word [8]byte
	for i := 1; i <= rounds; i++ {
		if late && i%n == r {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		}
		binary.LittleEndian.PutUint64(word[:], uint64(i))
		for q := range n {
			dst := engine.SymmetricBuffer{Rank: q, Offset: b.Offset + uint64(8*r), Len: 8}
			if err := ts[r].Put(dst, word[:]); err != nil {
				return fmt.Errorf("rank %d, round %d: put to %d: %w", r, i, q, err)
			}
		}
		if err := ts[r].Barrier(); err != nil {
			return fmt.Errorf("rank %d, round %d: barrier: %w", r, i, err)
		}
		mine, err := ts[r].Heap().Slice(b.Offset, b.Len)
		if err != nil {
			return err
		}
		for q := range n {
			if got := binary.LittleEndian.Uint64(mine[8*q:]); got < uint64(i) {
				return fmt.Errorf("rank %d, after barrier %d: rank %d's put %d, want %d", r, i, q, got, i)
			}
		}
		if err := ts[r].Barrier(); err != nil { // before the next round's puts
			return fmt.Errorf("rank %d, round %d: second barrier: %w", r, i, err)
		}
	}
	return nil
}

// TestBarrierMailFrames: a neighbour that signals a barrier round by
// frame (one whose mailbox was not set up yet as it signalled) is
// answered by frame, after an earlier epoch's frame is dropped; and the
// barrier completes.
func TestBarrierMailFrames(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{Spin: 20 * time.Microsecond})
	if got := ts[0].Topology().Neighbours(); len(got) != 1 {
		t.Fatalf("Topology().Neighbours = %v: the test needs shared memory", got)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- ts[0].BarrierContext(ctx)
	}()
	for _, epoch := range []uint64{0, 1} { // a stale one, then barrier 1's
		sig := binary.LittleEndian.AppendUint64(nil, epoch)
		if err := engine.SendTag(ts[1], 0, engine.TagBarrier, sig); err != nil {
			t.Fatal(err)
		}
	}
	got, err := engine.RecvTag(ts[1], 0, engine.TagBarrier, 10*time.Second)
	if err != nil || len(got) != 8 || binary.LittleEndian.Uint64(got) != 1 {
		t.Fatalf("rank 0's answer % x, %v; want barrier 1's signal", got, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("barrier: %v", err)
	}
}

// TestBarrierBesideCollectives: barriers on one goroutine and collective
// exchanges on another, on both neighbours at once, in whatever order
// each rank's goroutines make them: neither waits for the other (a
// barrier's signals are apart from the exchanges' mailbox slots).
func TestBarrierBesideCollectives(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const rounds = 300
	var wg sync.WaitGroup
	errs := make([]error, 4)
	comms := make([]*collective.Comm, 2)
	for r := range comms {
		c, err := collective.New(ts[r], collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		comms[r] = c
	}
	for r := range 2 {
		wg.Go(func() {
			for i := range rounds {
				if err := ts[r].BarrierContext(ctx); err != nil {
					errs[r] = fmt.Errorf("rank %d, barrier %d: %w", r, i, err)
					return
				}
			}
		})
		wg.Go(func() {
			// An 8-byte allreduce of 2 neighbours is one mailbox exchange.
			for i := range rounds {
				v := []int64{int64(r + i)}
				if err := comms[r].AllReduceBytes(ctx, collective.Int64, collective.AsBytes(v), collective.Sum); err != nil {
					errs[2+r] = fmt.Errorf("rank %d, exchange %d: %w", r, i, err)
					return
				}
				if want := int64(1 + 2*i); v[0] != want {
					errs[2+r] = fmt.Errorf("rank %d, exchange %d: got %d, want %d", r, i, v[0], want)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestBarrierMailThenClose: a neighbour that closes as soon as its
// barrier is done leaves the other's barrier complete, not failed with
// the close, whether that one spins or sleeps: the signal, given before
// the close, wins over the receive the close fails.
//
// On one P, rank 1's WAKE and its close are both in by the time rank 0's
// barrier runs again, so that the race is there every run.
func TestBarrierMailThenClose(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, spin := range []time.Duration{-1, 50 * time.Microsecond} {
		for i := range 20 {
			ts := newMesh(t, 2, engine.Options{Spin: spin})
			done := make(chan error, 1)
			go func() { done <- ts[0].Barrier() }()
			time.Sleep(time.Millisecond) // rank 0 waits first
			if err := ts[1].Barrier(); err != nil {
				t.Fatalf("spin %v, run %d: rank 1: %v", spin, i, err)
			}
			ts[1].Close()
			if err := <-done; err != nil {
				t.Fatalf("spin %v, run %d: rank 0's barrier with a rank that closed right after it: %v", spin, i, err)
			}
		}
	}
}
