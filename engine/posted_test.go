package engine_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// TestPostFrom: rank 0 posts receives from ranks 1 and 2 for messages
// past the eager limit, and both senders finish before it waits for
// either (a rendezvous message moves once its receive is posted); its
// waits then return the bytes. A receive dropped before anything came is
// withdrawn: the message sent after goes to the next receive.
func TestPostFrom(t *testing.T) {
	ts := newMesh(t, 3, engine.Options{})
	const tag, meta, size = 5, 9, 2 << 20
	msgs := [][]byte{nil, bytes.Repeat([]byte{1}, size), bytes.Repeat([]byte{2}, size)}
	dsts := [][]byte{nil, make([]byte, size), make([]byte, size)}
	recvs := make([]*testRecv, 3)
	for p := 1; p <= 2; p++ {
		var err error
		if recvs[p], err = hooks(ts[0]).PostFrom(p, tag, meta, dsts[p]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for p := 1; p <= 2; p++ {
		wg.Go(func() { errs[p] = hooks(ts[p]).SendMsg(context.Background(), 0, tag, meta, msgs[p]) })
	}
	sent := make(chan struct{})
	go func() { wg.Wait(); close(sent) }()
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the senders did not finish before rank 0 waited: their receives were not taken")
	}
	for p := 1; p <= 2; p++ {
		if errs[p] != nil {
			t.Fatalf("rank %d: %v", p, errs[p])
		}
		n, err := recvs[p].Wait(context.Background(), time.Time{}, time.Time{})
		if err != nil || n != size || !bytes.Equal(dsts[p], msgs[p]) {
			t.Fatalf("from rank %d: %d bytes, %v", p, n, err)
		}
	}

	r, err := hooks(ts[0]).PostFrom(1, tag+1, meta, dsts[1])
	if err != nil {
		t.Fatal(err)
	}
	if !r.Drop() {
		t.Fatal("a receive nothing had come for was not withdrawn")
	}
	if err := hooks(ts[1]).SendMsg(context.Background(), 0, tag+1, meta, []byte("after")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := hooks(ts[0]).RecvFrom(context.Background(), 1, tag+1, meta, buf, time.Now().Add(10*time.Second), time.Time{})
	if err != nil || string(buf[:n]) != "after" {
		t.Fatalf("the message after the dropped receive: %q, %v", buf[:n], err)
	}
}

// TestPostFromInFlight: a posted receive whose message stops arriving
// halfway (its link stalled) gives up at the deadline with an
// *plumb.InFlightError once inFlightUntil passes too; a drop of one whose
// message stopped halfway reports its buffer still the transport's. Once
// the link moves, both ranks go on.
func TestPostFromInFlight(t *testing.T) {
	ts, faults := faultyMesh(t, 2, engine.Options{Streams: 1})
	const tag, meta, size = 5, 9, 2 << 20
	msg := bytes.Repeat([]byte{7}, size)
	faults[faultKey{0, 1, 0}].StallAfter(64 << 10)
	sent := make(chan error, 2)
	go func() {
		sent <- hooks(ts[1]).SendMsg(context.Background(), 0, tag, meta, msg)
		sent <- hooks(ts[1]).SendMsg(context.Background(), 0, tag+1, meta, msg)
	}()
	r, err := hooks(ts[0]).PostFrom(1, tag, meta, make([]byte, size))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	_, err = r.Wait(context.Background(), now.Add(300*time.Millisecond), now.Add(600*time.Millisecond))
	var ife *plumb.InFlightError
	if !errors.As(err, &ife) || !errors.Is(err, engine.ErrTimeout) || ife.Rank != 1 {
		t.Fatalf("wait for a message stopped halfway: %v, want an InFlightError for rank 1 wrapping ErrTimeout", err)
	}
	faults[faultKey{0, 1, 0}].Stall(false)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	pingPong(t, ts[1], ts[0]) // on the same stream: the first message is read in by now
	// The second message, stopped halfway too: its receive, claimed, is
	// not withdrawn by a drop, and its buffer stays the transport's.
	f := faults[faultKey{0, 1, 0}]
	f.StallAfter(64 << 10)
	r, err = hooks(ts[0]).PostFrom(1, tag+1, meta, make([]byte, size))
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); !f.Stalled(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the second message never reached the stall point")
		}
	}
	if r.Drop() {
		t.Fatal("a receive whose message was being read in was withdrawn, its buffer reported free")
	}
	f.Stall(false)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	pingPong(t, ts[0], ts[1])
}
