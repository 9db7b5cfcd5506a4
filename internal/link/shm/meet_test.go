package shm

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/heap"
)

// meetHeap makes a heap of 1 MiB with pattern at its start, closed at
// cleanup.
func meetHeap(t *testing.T, pattern string) *heap.Heap {
	t.Helper()
	h, err := heap.New(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	copy(h.Region(), pattern)
	return h
}

// TestMeet: a dialer meets an acceptor that expects it: each side maps
// the other's heap, holds its side of the pipes and the mailbox, and the
// two sides see one memory; a dialer with a token nobody expects is
// refused and gets nothing.
func TestMeet(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the meeting needs memfd and descriptor passing over Unix sockets as Linux has them")
	}
	ha, hd := meetHeap(t, "acceptor's heap"), meetHeap(t, "dialer's heap")
	cfgA := MeetConfig{Rank: 0, HeapFD: ha.FD(), HeapSize: ha.Size(), Ring: 64 << 10, Timeout: 5 * time.Second}
	cfgD := MeetConfig{Rank: 1, HeapFD: hd.FD(), HeapSize: hd.Size(), Ring: 64 << 10, Timeout: 5 * time.Second}
	failed := make(chan error, 4)
	m, err := ListenMeetings(cfgA, func(_ int, err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	token := [32]byte{1, 2, 3}
	o := m.Expect(token, 1)
	dialed, err := Meet(cfgD, 0, m.Addr(), token[:])
	if err != nil {
		t.Fatalf("Meet: %v", err)
	}
	accepted := m.Await(o, 5*time.Second)
	if accepted == nil {
		t.Fatal("the acceptor's meeting gave no pair")
	}
	for _, c := range []struct {
		name string
		p    *Pair
		side int
		heap string
	}{{"dialer", dialed, 0, "acceptor's heap"}, {"acceptor", accepted, 1, "dialer's heap"}} {
		if c.p.Side() != c.side {
			t.Errorf("%s's side %d, want %d", c.name, c.p.Side(), c.side)
		}
		b, err := c.p.Heap.Slice(0, uint64(len(c.heap)))
		if err != nil || string(b) != c.heap {
			t.Errorf("%s maps %q (%v), want the other's %q", c.name, b, err, c.heap)
		}
		if c.p.Copy.In || c.p.Copy.Out {
			t.Errorf("%s copies %+v with no probe", c.name, c.p.Copy)
		}
	}
	memD, _, relD := dialed.DataPipe()
	memA, _, relA := accepted.DataPipe()
	copy(memD[len(memD)-5:], "hello")
	if !bytes.Equal(memA[len(memA)-5:], []byte("hello")) {
		t.Fatal("the two sides' pipes are not one memory")
	}
	relD()
	relA()
	for _, p := range []*Pair{dialed, accepted} {
		p.CloseBells()
		p.Heap.Close()
		p.Heap = nil
		_, _, rel := p.CtlPipe()
		rel()
	}

	if _, err := Meet(cfgD, 0, m.Addr(), []byte("a token nobody expects, 32 b!!!")); err == nil {
		t.Fatal("a meeting nobody expected was accepted")
	}
}
