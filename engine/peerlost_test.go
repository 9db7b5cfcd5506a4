package engine_test

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// lostWithin is how promptly a killed peer must be noticed.
const lostWithin = 5 * time.Second

func TestPeerKilledMidTransfer(t *testing.T) {
	lns, addrs := listeners(t, 3)
	child := startChild(t, "flood", 2, lns[2], addrs)
	ts := make([]*engine.NetTransport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { ts[r], errs[r] = engine.FromListener(r, 3, lns[r], addrs, engine.Options{}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	defer ts[0].Close()
	defer ts[1].Close()

	buf := make([]byte, floodSize)
	if n, err := ts[0].RecvInto(2, floodTag, buf); err != nil || check(buf[:n], 2, 0, floodTag, 0, floodSize) != nil {
		t.Fatalf("first flood message: n=%d err=%v", n, err)
	}
	pending := make(chan error, 1)
	go func() {
		_, err := ts[0].RecvInto(2, floodTag, buf)
		for err == nil { // whole messages may still be queued; the kill ends the stream
			_, err = ts[0].RecvInto(2, floodTag, buf)
		}
		pending <- err
	}()
	time.Sleep(20 * time.Millisecond)
	killed := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-pending:
		requirePeerLost(t, err, 2)
	case <-time.After(lostWithin):
		t.Fatalf("RecvInto still blocked %v after the peer was killed", lostWithin)
	}
	t.Logf("loss noticed after %v", time.Since(killed))

	requireLostSoon(t, func() error { return ts[1].Send(2, 5, []byte("x")) }, 2)
	requireLostSoon(t, func() error { return ts[0].Send(2, 5, make([]byte, 1<<20)) }, 2)
	for _, tr := range ts {
		requirePeerLost(t, tr.Barrier(), 2)
		_, err := tr.Recv(2, 9)
		requirePeerLost(t, err, 2)
	}

	// The survivors still talk to each other.
	msg := pattern(0, 1, 3, 0, 1<<20)
	go func() { ts[0].Send(1, 3, msg) }()
	got, err := ts[1].Recv(0, 3)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("survivors: %v", err)
	}
}

// requireLostSoon retries op until it fails with ErrPeerLost (the loss may
// still be travelling to this rank), within lostWithin.
func requireLostSoon(t *testing.T, op func() error, rank int) {
	t.Helper()
	deadline := time.Now().Add(lostWithin)
	for {
		err := op()
		if err != nil || time.Now().After(deadline) {
			requirePeerLost(t, err, rank)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func requirePeerLost(t *testing.T, err error, rank int) {
	t.Helper()
	if !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("got %v, want ErrPeerLost", err)
	}
	var pe *engine.PeerError
	if !errors.As(err, &pe) || pe.Rank != rank {
		t.Fatalf("got %v, want a *PeerError for rank %d", err, rank)
	}
}

func TestPeerClosedInProcess(t *testing.T) {
	ts := newMesh(t, 3, engine.Options{})
	waiting := make(chan error, 1)
	go func() {
		_, err := ts[0].Recv(2, 1)
		waiting <- err
	}()
	time.Sleep(10 * time.Millisecond)
	ts[2].Close()
	select {
	case err := <-waiting:
		requirePeerLost(t, err, 2)
	case <-time.After(lostWithin):
		t.Fatal("Recv still blocked after the peer closed")
	}
	if err := ts[1].Barrier(); !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("barrier: %v", err)
	}
	if err := ts[2].Send(0, 1, nil); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("send on closed transport: %v", err)
	}
	_ = net.ErrClosed
}
