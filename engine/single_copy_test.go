package engine_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// singleCopyPair builds two neighbours in this process (the copy reads
// this process's own memory, through the same system call as between
// processes) and skips where the system has no single copy.
func singleCopyPair(t *testing.T, opts engine.Options) []*engine.NetTransport {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("single copy is Linux's process_vm_readv; elsewhere neighbours keep the rings")
	}
	if opts.SingleCopyMin == 0 {
		opts.SingleCopyMin = 256 << 10
	}
	ts := meshHosts(t, []string{"", ""}, opts)
	for r, tr := range ts {
		if got := tr.Topology().SingleCopy(); len(got) != 1 || got[0] != 1-r {
			t.Fatalf("rank %d: Topology().SingleCopy = %v, want [%d]", r, got, 1-r)
		}
	}
	return ts
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestSingleCopySendsFinishAlone: messages from SingleCopyMin up to the
// eager limit go by single copy yet keep an eager send's meaning: both
// ranks send to each other before either receives (which deadlocks if
// a send waited for its receive), with a receive posted first for one of
// them (most runs), and every byte arrives, in order with a short message behind on
// the same tag.
func TestSingleCopySendsFinishAlone(t *testing.T) {
	ts := singleCopyPair(t, engine.Options{})
	const big = 512 << 10
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, tr := range ts {
		wg.Go(func() {
			errs[r] = func() error {
				peer := 1 - r
				posted := make(chan error, 1)
				buf := make([]byte, big)
				go func() { // posted before its message comes, most runs
					k, err := tr.RecvIntoContext(ctx, peer, 9, buf)
					if err == nil && (k != big || !bytes.Equal(buf, randomBytes(big, uint64(10*peer+9)))) {
						err = errors.New("the posted receive's message arrived altered")
					}
					posted <- err
				}()
				time.Sleep(10 * time.Millisecond)
				for i, n := range []int{big, big, 8} {
					if err := tr.SendContext(ctx, peer, 3, randomBytes(n, uint64(10*r+i))); err != nil {
						return err
					}
				}
				if err := tr.SendContext(ctx, peer, 9, randomBytes(big, uint64(10*r+9))); err != nil {
					return err
				}
				for i, n := range []int{big, big, 8} {
					got, err := tr.RecvContext(ctx, peer, 3)
					if err != nil {
						return err
					}
					if want := randomBytes(n, uint64(10*peer+i)); !bytes.Equal(got, want) {
						return errors.New("a message by single copy arrived altered or out of order")
					}
				}
				return <-posted
			}()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r, tr := range ts {
		if got := engine.SingleCopies(tr, 1-r); got != 3 {
			t.Errorf("rank %d copied %d messages, want 3 (the two held and the posted one)", r, got)
		}
	}
}

// TestSingleCopyRendezvous: a message above the eager limit goes by
// single copy when its receive takes it, whether the receive came first
// or the RTS did, and with Options.SingleCopyMin 0 (the default) nothing
// is copied and the bytes still arrive.
func TestSingleCopyRendezvous(t *testing.T) {
	for _, c := range []struct {
		name string
		min  int
		want uint64
	}{{"on", 256 << 10, 2}, {"off", 0, 0}} {
		t.Run(c.name, func(t *testing.T) {
			if runtime.GOOS != "linux" && c.min > 0 {
				t.Skip("single copy is Linux's process_vm_readv")
			}
			ts := meshHosts(t, []string{"", ""}, engine.Options{SingleCopyMin: c.min})
			const n = 6 << 20
			msg := randomBytes(n, 42)
			done := make(chan error, 1)
			go func() {
				err := ts[0].Send(1, 1, msg)
				if err == nil {
					err = ts[0].Send(1, 2, msg)
				}
				done <- err
			}()
			buf := make([]byte, n)
			if k, err := ts[1].RecvInto(0, 1, buf); err != nil || k != n || !bytes.Equal(buf, msg) {
				t.Fatalf("RecvInto = %d, %v; bytes equal %v", k, err, bytes.Equal(buf, msg))
			}
			time.Sleep(10 * time.Millisecond) // the second RTS comes before its receive, most runs
			clear(buf)
			if k, err := ts[1].RecvInto(0, 2, buf); err != nil || k != n || !bytes.Equal(buf, msg) {
				t.Fatalf("RecvInto = %d, %v; bytes equal %v", k, err, bytes.Equal(buf, msg))
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := engine.SingleCopies(ts[1], 0); got != c.want {
				t.Errorf("copied %d messages, want %d", got, c.want)
			}
		})
	}
}

// TestSingleCopyFailureDropsPeer: a copy that fails after the meeting
// found it possible (here: the neighbour's process "gone") drops the
// neighbour: the receive fails with ErrPeerLost caused by ErrSingleCopy,
// and the sender's call ends too rather than hang.
func TestSingleCopyFailureDropsPeer(t *testing.T) {
	ts := singleCopyPair(t, engine.Options{KeepAlive: 200 * time.Millisecond})
	engine.BreakSingleCopy(ts[1], 0)
	const n = 6 << 20
	done := make(chan error, 1)
	go func() { done <- ts[0].Send(1, 1, randomBytes(n, 1)) }()
	buf := make([]byte, n)
	_, err := ts[1].RecvInto(0, 1, buf)
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrSingleCopy) {
		t.Fatalf("RecvInto = %v, want ErrPeerLost caused by ErrSingleCopy", err)
	}
	if !bytes.Equal(buf, make([]byte, n)) {
		t.Error("the failed receive's buffer was written")
	}
	select {
	case err := <-done:
		if !errors.Is(err, engine.ErrPeerLost) {
			t.Fatalf("Send = %v, want ErrPeerLost", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the sender still waits for an answer from a rank that dropped it")
	}
}

// TestSingleCopyWithdrawn: a send by single copy whose RTS waits queued
// (above the eager limit, no receive posted) and whose context ends is
// withdrawn: the call returns the context's error, the receiver forgets
// the address it held, and the next message on the tag arrives whole.
func TestSingleCopyWithdrawn(t *testing.T) {
	ts := singleCopyPair(t, engine.Options{})
	const n = 6 << 20
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := ts[0].SendContext(ctx, 1, 4, randomBytes(n, 1))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("SendContext = %v, want DeadlineExceeded", err)
		}
	}
	want := randomBytes(n, 2)
	done := make(chan error, 1)
	go func() { done <- ts[0].Send(1, 4, want) }()
	got, err := ts[1].Recv(0, 4)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Recv = %d bytes, %v; want the message sent after the withdrawn ones", len(got), err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if k := engine.QueuedCopies(ts[1], 0); k != 0 {
		t.Errorf("the receiver still holds %d addresses of withdrawn messages", k)
	}
	if got := engine.SingleCopies(ts[1], 0); got != 1 {
		t.Errorf("copied %d messages, want 1", got)
	}
}
