package collective

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/internal/plumb/plumbtest"
)

// mailSizes are the part sizes a mailbox exchange test goes through:
// empty, small, the longest kept beside the header and one beyond it, the
// mailbox's limit and one beyond it (frames).
var mailSizes = []int{0, 1, 8, shm.MailboxInline, shm.MailboxInline + 1, 100, 1024, plumb.MailboxMax, plumb.MailboxMax + 1}

// TestMailboxExchange: between neighbours, ExchangeColl of parts up to
// MailboxMax goes through the mailbox (no frame), longer ones by frames,
// and every part arrives intact, call after call on changing tags: with
// the default spin, with one rank late (the other sleeps and is woken by
// WAKE), and with no spinning at all (every exchange sleeps).
func TestMailboxExchange(t *testing.T) {
	for _, c := range []struct {
		name string
		opts engine.Options
		late bool
	}{
		{"spin", engine.Options{}, false},
		{"late", engine.Options{Spin: 20 * time.Microsecond}, true},
		{"no spin", engine.Options{Spin: -1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := bareMesh(t, 2, c.opts)
			if got := ts[0].Topology().Neighbours(); len(got) != 1 {
				t.Fatalf("Topology().Neighbours = %v: the test needs shared memory", got)
			}
			ctx := context.Background()
			const rounds = 300
			small := 0
			for k := range rounds {
				size := mailSizes[k%len(mailSizes)]
				if size <= plumb.MailboxMax {
					small++
				}
				tag := uint32(k*64+3) % plumb.Tags
				err := collPair(func(r int) error {
					if c.late && r == k%2 {
						time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
					}
					in := make([]byte, size)
					n, err := hooksOf(ts[r]).Exchange(ctx, 1-r, 1-r, tag, 7, pattern(r, 1-r, int(tag), k, size), in)
					if err != nil {
						return fmt.Errorf("rank %d, round %d (%d B): %w", r, k, size, err)
					}
					if n != size || !bytes.Equal(in, pattern(1-r, r, int(tag), k, size)) {
						return fmt.Errorf("rank %d, round %d: got %d bytes, not the %d sent", r, k, n, size)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			for r := range 2 {
				if got := mailboxWrites(ts[r], 1-r); got != small {
					t.Errorf("rank %d wrote %d parts into the mailbox, want %d (those of at most MailboxMax bytes)", r, got, small)
				}
			}
		})
	}
}

// TestMailboxMismatch: parts whose meta or length differ fail the
// exchange as frames do (*CollMismatchError, *CollLengthError, both
// wrapping ErrCollMismatch), also when one rank's part goes by frame
// because it is longer than MailboxMax; a shorter part is returned with
// its length. The mailbox keeps working afterwards.
func TestMailboxMismatch(t *testing.T) {
	ts := bareMesh(t, 2, engine.Options{})
	ctx := context.Background()
	xc := func(r int, tag, meta uint32, out, in int) (int, error) {
		return hooksOf(ts[r]).Exchange(ctx, 1-r, 1-r, tag, meta, make([]byte, out), make([]byte, in))
	}
	var errs [2]error
	var ns [2]int
	collPair(func(r int) error { ns[r], errs[r] = xc(r, 1, uint32(10+r), 8, 8); return nil })
	var me *plumb.CollMismatchError
	for r := range 2 {
		if !errors.As(errs[r], &me) || !errors.Is(errs[r], plumb.ErrCollMismatch) || me.Want != uint32(10+r) || me.Got != uint32(11-r) {
			t.Fatalf("rank %d, metas differ: got %v", r, errs[r])
		}
	}
	collPair(func(r int) error { ns[r], errs[r] = xc(r, 65, 1, 8+8*r, 8+8*r); return nil })
	var le *plumb.CollLengthError
	if !errors.As(errs[0], &le) || !errors.Is(errs[0], plumb.ErrCollMismatch) || le.Got != 16 || le.Want != 8 {
		t.Fatalf("rank 0, a longer part: got %v", errs[0])
	}
	if errs[1] != nil || ns[1] != 8 {
		t.Fatalf("rank 1, a shorter part: got %d bytes, %v; want 8, nil", ns[1], errs[1])
	}
	// Rank 1's part goes by frame: rank 0's posted receive gets it.
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	collPair(func(r int) error {
		if r == 1 {
			_, errs[1] = hooksOf(ts[1]).Exchange(dctx, 0, 0, 129, 1, make([]byte, plumb.MailboxMax+8), make([]byte, plumb.MailboxMax+8))
		} else {
			ns[0], errs[0] = xc(0, 129, 1, 8, 8)
		}
		return nil
	})
	if !errors.As(errs[0], &le) || le.Got != plumb.MailboxMax+8 {
		t.Fatalf("rank 0, a part sent by frame: got %v", errs[0])
	}
	if !errors.Is(errs[1], context.DeadlineExceeded) {
		t.Fatalf("rank 1, whose part never came: got %v, want its ctx's end", errs[1])
	}
	err := collPair(func(r int) error {
		n, err := xc(r, 193, 1, 64, 64)
		if err == nil && n != 64 {
			err = fmt.Errorf("rank %d: %d bytes", r, n)
		}
		return err
	})
	if err != nil {
		t.Fatalf("after the mismatches: %v", err)
	}
}

// TestMailboxGivesUp: an exchange whose neighbour never comes ends with
// its ctx (after sleeping), and the next exchanges of both ranks match;
// one whose neighbour closes ends with ErrPeerLost.
func TestMailboxGivesUp(t *testing.T) {
	ts := bareMesh(t, 2, engine.Options{})
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := hooksOf(ts[0]).Exchange(dctx, 1, 1, 1, 1, make([]byte, 8), make([]byte, 8)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the ctx's end", err)
	}
	for k := range 3 {
		tag := uint32(65 + 64*k)
		err := collPair(func(r int) error {
			in := make([]byte, 8)
			_, err := hooksOf(ts[r]).Exchange(ctx, 1-r, 1-r, tag, 1, pattern(r, 1-r, int(tag), k, 8), in)
			if err == nil && !bytes.Equal(in, pattern(1-r, r, int(tag), k, 8)) {
				err = fmt.Errorf("rank %d, exchange %d: wrong bytes", r, k)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := hooksOf(ts[0]).Exchange(ctx, 1, 1, 257, 1, make([]byte, 8), make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // asleep by now
	ts[1].Close()
	select {
	case err := <-done:
		if !errors.Is(err, engine.ErrPeerLost) {
			t.Fatalf("got %v, want ErrPeerLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the exchange with a closed neighbour did not end")
	}
}

// TestMailboxUnevenBuffers: a rank whose receive buffer is longer than
// MailboxMax exchanges by frames while its neighbour uses the mailbox;
// the neighbour's posted receive takes the frame and its part follows
// as a frame, so both complete with the right bytes (as reduce-scatter's
// uneven pieces need).
func TestMailboxUnevenBuffers(t *testing.T) {
	ts := bareMesh(t, 2, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for k, tag := range []uint32{1, 65, 129} {
		err := collPair(func(r int) error {
			in := make([]byte, []int{8, 2 * plumb.MailboxMax}[r])
			n, err := hooksOf(ts[r]).Exchange(ctx, 1-r, 1-r, tag, 1, pattern(r, 1-r, int(tag), k, 8), in)
			if err == nil && (n != 8 || !bytes.Equal(in[:n], pattern(1-r, r, int(tag), k, 8))) {
				err = fmt.Errorf("rank %d, exchange %d: got %d bytes, not the 8 sent", r, k, n)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestMailboxPartBeforeAbandon: a neighbour's part written into the
// mailbox before the neighbour gave the call up is taken, as its frame
// would have been (a message that arrived wins over the ABANDON after
// it), even though the owner refuses the step's receive by then.
func TestMailboxPartBeforeAbandon(t *testing.T) {
	ts := meshtest.Mesh(t, 2, engine.Options{Spin: -1}) // straight to the posted receive
	own(t, ts[0], &plumbtest.Owner{})
	bare(t, ts[1])
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := hooksOf(ts[1]).Exchange(dctx, 0, 0, 1, 7, pattern(1, 0, 1, 0, 8), make([]byte, 8)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("rank 1 alone: got %v, want its ctx's end", err)
	}
	hooksOf(ts[1]).Tell(1, 5)
	time.Sleep(50 * time.Millisecond) // the ABANDON reaches rank 0's owner
	in := make([]byte, 8)
	n, err := hooksOf(ts[0]).Exchange(ctx, 1, 1, 1, 7, pattern(0, 1, 1, 0, 8), in)
	if err != nil || n != 8 || !bytes.Equal(in, pattern(1, 0, 1, 0, 8)) {
		t.Fatalf("rank 0: got %d bytes, %v; want rank 1's 8 bytes from the mailbox", n, err)
	}
}

// TestMailboxNoConflictWhileWantedIsIn: a part for another step of the
// call in the neighbour's other slot is no conflict once the part waited
// for is in the mailbox too: the neighbour wrote it first, and a look
// that missed it (made just before) then saw the later one. (Judged a
// conflict, it failed TestOneSidedHeapTooSmall in CI: the slower rank,
// still at the first agreement, saw the faster one's part of the second.)
func TestMailboxNoConflictWhileWantedIsIn(t *testing.T) {
	ts := meshtest.Mesh(t, 2, engine.Options{})
	const step, next = 5, 6
	own(t, ts[0], &plumbtest.Owner{ConflictTag: step, ConflictWith: next})
	bare(t, ts[1])
	mailboxPost(ts[1], 0, next, 1, []byte("later"))
	if err := mailboxConflict(ts[0], 1, step, 1); !errors.Is(err, plumbtest.ErrConflict) {
		t.Fatalf("another step's part alone: got %v, want the owner's conflict", err)
	}
	mailboxPost(ts[1], 0, step, 1, []byte("first"))
	if err := mailboxConflict(ts[0], 1, step, 1); err != nil {
		t.Fatalf("the part waited for is in beside another step's: got %v, want no conflict", err)
	}
	in := make([]byte, 8)
	n, err := hooksOf(ts[0]).Exchange(context.Background(), 1, 1, step, 1, []byte("mine"), in)
	if err != nil || string(in[:n]) != "first" {
		t.Fatalf("the exchange: got %q, %v; want the part waited for", in[:n], err)
	}
}

// TestMailboxPartWins: the neighbour's part that is in the mailbox is
// the exchange's result, whatever else ended the wait meanwhile: this
// rank's ctx, found ended right after a look that missed the part, or
// the neighbour's close once it completed the step (its part, and this
// rank's, were in), found after this rank saw its part but before it
// took its receive back. The hook makes each race's other side happen
// in its window.
func TestMailboxPartWins(t *testing.T) {
	const tag, meta, size = 5, 9, 64
	for _, c := range []struct {
		name string
		spin time.Duration
		at   int
	}{
		{"ctx ends during the spin", time.Minute, hookSpinMissed},
		{"neighbour closes while asleep", -1, hookSawPart},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ts []*engine.NetTransport
			var once sync.Once
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done0 := make(chan error, 1)
			setMailHook(t, func(rank int, at int) {
				if rank != 1 || at != c.at {
					return
				}
				once.Do(func() {
					if at == hookSpinMissed {
						mailboxPost(ts[0], 1, tag, meta, pattern(0, 1, tag, 0, size))
						cancel()
						return
					}
					if err := <-done0; err != nil {
						t.Errorf("rank 0: %v", err)
					}
					if err := ts[0].Close(); err != nil {
						t.Errorf("rank 0 Close: %v", err)
					}
					for peerLost(ts[1], 0) == nil {
						time.Sleep(time.Millisecond)
					}
				})
			})
			ts = bareMesh(t, 2, engine.Options{Spin: c.spin})
			if got := ts[1].Topology().Neighbours(); len(got) != 1 {
				t.Fatalf("Topology().Neighbours = %v: the test needs shared memory", got)
			}
			if c.at == hookSawPart {
				go func() {
					in := make([]byte, size)
					_, err := hooksOf(ts[0]).Exchange(context.Background(), 1, 1, tag, meta, pattern(0, 1, tag, 0, size), in)
					if err == nil && !bytes.Equal(in, pattern(1, 0, tag, 0, size)) {
						err = errors.New("got other bytes than rank 1 sent")
					}
					done0 <- err
				}()
			}
			in := make([]byte, size)
			n, err := hooksOf(ts[1]).Exchange(ctx, 0, 0, tag, meta, pattern(1, 0, tag, 0, size), in)
			if err != nil || n != size || !bytes.Equal(in, pattern(0, 1, tag, 0, size)) {
				t.Fatalf("exchange: %d bytes, %v; want the %d bytes rank 0 wrote", n, err, size)
			}
		})
	}
}
