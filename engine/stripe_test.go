package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestStripedInOrder sends, from several goroutines at once (one tag
// each, plus one tag shared by two of them in turns), messages of random
// sizes around the striping threshold, small ones between them, over 3
// streams per pair: every message arrives intact and in per-(source, tag)
// order, whether its receive was posted first (read in place) or not
// (reassembled in a pooled buffer).
func TestStripedInOrder(t *testing.T) {
	const stripeMin, senders, msgs = 64 << 10, 4, 40
	ts := meshtest.Mesh(t, 2, engine.Options{Streams: 3, StripeMin: stripeMin})
	sizes := make([][]int, senders)
	rng := rand.New(rand.NewPCG(1, 2))
	for g := range sizes {
		sizes[g] = make([]int, msgs)
		for i := range sizes[g] {
			switch rng.IntN(4) {
			case 0:
				sizes[g][i] = rng.IntN(200) // small: not striped
			case 1:
				sizes[g][i] = stripeMin*4 + rng.IntN(stripeMin) // large
			default:
				sizes[g][i] = stripeMin - 8 + rng.IntN(16) // around the threshold
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*senders)
	for g := range senders {
		wg.Go(func() {
			for i, n := range sizes[g] {
				if err := ts[0].Send(1, g, pattern(0, 1, g, i, n)); err != nil {
					errs <- fmt.Errorf("sender %d message %d: %w", g, i, err)
					return
				}
			}
		})
		wg.Go(func() {
			buf := make([]byte, stripeMin*6)
			for i, n := range sizes[g] {
				if i%5 == 0 {
					time.Sleep(time.Millisecond) // let some arrive before their receive
				}
				var got []byte
				var err error
				if i%2 == 0 {
					var m int
					m, err = ts[1].RecvInto(0, g, buf)
					got = buf[:m]
				} else {
					got, err = ts[1].Recv(0, g)
				}
				if err == nil {
					err = check(got, 0, 1, g, i, n)
				}
				if err != nil {
					errs <- fmt.Errorf("receiver %d message %d (%d bytes): %w", g, i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStripedUnexpectedThenSmall: a striped message nobody waits for yet,
// followed on the same tag by a small one, is received first: the small
// message never overtakes it. (The striped one goes by rendezvous, so its
// Send returns only once it is received.)
func TestStripedUnexpectedThenSmall(t *testing.T) {
	ts := meshtest.Mesh(t, 2, engine.Options{Streams: 4, StripeMin: 1 << 16})
	big := pattern(0, 1, 2, 0, 3<<20+5)
	sent := make(chan error, 1)
	go func() {
		err := ts[0].Send(1, 2, big)
		if err == nil {
			err = ts[0].Send(1, 2, pattern(0, 1, 2, 1, 10))
		}
		sent <- err
	}()
	time.Sleep(20 * time.Millisecond)
	for i, n := range []int{len(big), 10} {
		got, err := ts[1].Recv(0, 2)
		if err == nil {
			err = check(got, 0, 1, 2, i, n)
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// TestStreamsMismatch: ranks configured with different stream counts
// refuse each other and say why.
func TestStreamsMismatch(t *testing.T) {
	lns, addrs := meshtest.Listeners(t, 2)
	done := make(chan error, 1)
	go func() {
		tr, err := engine.FromListener(0, 2, lns[0], addrs, engine.Options{Streams: 2, DialTimeout: time.Second})
		if tr != nil {
			tr.Close()
		}
		done <- err
	}()
	_, err := engine.FromListener(1, 2, lns[1], addrs, engine.Options{Streams: 3, DialTimeout: time.Second})
	if err == nil {
		t.Fatal("rank with 3 streams joined a rank with 2")
	}
	<-done
}

// TestStripedSendContextWithdraws: a striped send to a receiver that posts
// nothing goes by rendezvous and returns when its ctx ends, withdrawn: the
// receiver never sees it, the caller's buffer is free at once, and the
// streams carry the next message intact.
func TestStripedSendContextWithdraws(t *testing.T) {
	const size = 48 << 20
	ts := meshtest.Mesh(t, 2, engine.Options{Streams: 3, StripeMin: 1 << 16, SocketBuffer: 256 << 10})
	msg := make([]byte, size)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := ts[0].SendContext(ctx, 1, 5, msg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SendContext of a striped message nobody receives = %v, want context.DeadlineExceeded", err)
	}
	for i := range msg {
		msg[i] = byte(i*7 + i>>13)
	}
	sent := make(chan error, 1)
	go func() { sent <- ts[0].Send(1, 5, msg) }()
	got := make([]byte, size)
	n, err := ts[1].RecvInto(0, 5, got)
	if err != nil || n != size {
		t.Fatalf("RecvInto = %d, %v; want %d bytes", n, err, size)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != byte(i*7+i>>13) {
			t.Fatalf("byte %d is %d, want %d (the withdrawn message was received?)", i, got[i], byte(i*7+i>>13))
		}
	}
	if b, err := ts[1].RecvTimeout(0, 5, 50*time.Millisecond); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("a second message arrived: %d bytes, %v", len(b), err)
	}
}
