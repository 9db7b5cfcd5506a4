package collective

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// TestExchangeCollChunks: both ranks exchange messages of sizes around the
// chunk size at once; every piece arrives in order, is handed to onChunk
// with its offset, and the bytes are intact.
func TestExchangeCollChunks(t *testing.T) {
	ts := bareMesh(t, 2, engine.Options{})
	const chunk = 1000
	for i, size := range []int{0, 1, 999, 1000, 1001, 2999, 3000, 64 << 10, 1<<20 + 7} {
		err := collPair(func(r int) error {
			out, in := pattern(r, 1-r, i, 0, size), make([]byte, size)
			want := pattern(1-r, r, i, 0, size)
			next := 0
			onChunk := func(off, n int) error {
				if off != next || n != min(chunk, size-off) {
					return fmt.Errorf("size %d: piece at %d of %d bytes, want %d of %d", size, off, n, next, min(chunk, size-off))
				}
				next += n
				if !bytes.Equal(in[off:off+n], want[off:off+n]) {
					return fmt.Errorf("size %d: piece at %d differs when handed over", size, off)
				}
				return nil
			}
			err := hooksOf(ts[r]).ExchangeChunks(context.Background(), 1-r, 1-r, uint32(i), 7, out, in, chunk, chunk, onChunk)
			if err != nil {
				return err
			}
			if next != size {
				return fmt.Errorf("size %d: pieces covered %d bytes", size, next)
			}
			if !bytes.Equal(in, want) {
				return fmt.Errorf("size %d: received bytes differ", size)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCollMetaMismatch: a collective receive expecting another meta fails
// with a *CollMismatchError; one expecting another length fails with a
// *CollLengthError; both wrap ErrCollMismatch.
func TestCollMetaMismatch(t *testing.T) {
	ts := bareMesh(t, 2, engine.Options{})
	ctx := context.Background()
	err := collPair(func(r int) error {
		if r == 0 {
			return hooksOf(ts[0]).SendMsg(ctx, 1, 5, 0xAA, []byte("hello"))
		}
		_, err := hooksOf(ts[1]).Recv(ctx, 0, 5, 0xBB, make([]byte, 5))
		return err
	})
	var me *plumb.CollMismatchError
	if !errors.As(err, &me) || !errors.Is(err, plumb.ErrCollMismatch) || me.Want != 0xBB || me.Got != 0xAA || me.Rank != 0 {
		t.Fatalf("meta mismatch: got %v", err)
	}
	err = collPair(func(r int) error {
		return hooksOf(ts[r]).ExchangeChunks(ctx, 1-r, 1-r, 6, 1, make([]byte, 100+r), make([]byte, 100+r), 64, 64, func(int, int) error { return nil })
	})
	var le *plumb.CollLengthError
	if !errors.As(err, &le) || !errors.Is(err, plumb.ErrCollMismatch) {
		t.Fatalf("length mismatch: got %v", err)
	}
}

// TestCollLengthMismatchRendezvous: a piece shorter than the receiver
// expects fails the receiver with a *CollLengthError also when it travels
// by rendezvous, which cuts the receive's buffer to the message's length
// as it takes it (a 3-rank allreduce in 512 KiB pieces once completed on
// the rank whose length differed).
func TestCollLengthMismatchRendezvous(t *testing.T) {
	for _, link := range meshtest.Links {
		t.Run(link.Name, func(t *testing.T) {
			opts := link.Opts
			opts.EagerMax = 256
			ts := bareMesh(t, 2, opts)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var short error
			_ = collPair(func(r int) error {
				// rank 0 sends 3000 bytes, where rank 1 expects 4000
				out, in := make([]byte, 3000+1000*r), make([]byte, 4000)
				err := hooksOf(ts[r]).ExchangeChunks(ctx, 1-r, 1-r, 6, 1, out, in, 8192, 8192, func(int, int) error { return nil })
				if r == 1 {
					short = err
				}
				return err
			})
			var le *plumb.CollLengthError
			if !errors.As(short, &le) || le.Want != 4000 || le.Got != 3000 {
				t.Fatalf("the receiver of the shorter piece: got %v, want a *CollLengthError of 3000 bytes for 4000", short)
			}
		})
	}
}

// TestExchangeCollChunksAbort: when onChunk fails, the exchange returns its
// error and withdraws the receives still posted, so that frames arriving
// after it returned are never read into the caller's buffer; they stay
// receivable, and the transport keeps working.
func TestExchangeCollChunksAbort(t *testing.T) {
	ts := bareMesh(t, 2, engine.Options{})
	ctx := context.Background()
	stop := errors.New("stop")
	done := make(chan error, 1)
	go func() {
		done <- hooksOf(ts[1]).ExchangeChunks(ctx, 0, 0, 9, 1, pattern(1, 0, 9, 0, 4000), make([]byte, 4000), 1000, 1000, func(int, int) error { return nil })
	}()
	in := make([]byte, 4000)
	err := hooksOf(ts[0]).ExchangeChunks(ctx, 1, 1, 9, 1, pattern(0, 1, 9, 0, 4000), in, 1000, 1000, func(off, n int) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("got %v, want the onChunk error", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("rank 1: %v", err)
	}
	snapshot := bytes.Clone(in)
	if err := hooksOf(ts[1]).SendMsg(ctx, 0, 9, 1, pattern(1, 0, 9, 1, 1000)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1000)
	want := pattern(1, 0, 9, 1, 1000)
	for i := 0; ; i++ { // pieces not read before the abort come first
		n, err := hooksOf(ts[0]).Recv(ctx, 1, 9, 1, got)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(got[:n], want) {
			break
		}
		if i == 3 {
			t.Fatal("the message sent after the abort never arrived")
		}
	}
	if !bytes.Equal(in, snapshot) {
		t.Fatal("a frame that arrived after the abort was read into the abandoned buffer")
	}
}
