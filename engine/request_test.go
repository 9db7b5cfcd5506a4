package engine_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// testUntilDone calls r.Test until it reports the request done, and
// returns its error.
func testUntilDone(t *testing.T, r *engine.Request, what string) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		done, err := r.Test()
		if done {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Test still reports it in progress after 10s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestRequestTest: Test finishes a request once it is over, and reports
// it in progress (Done false) until then: an eager send once written, a
// rendezvous send only once its receiver asked for it and the bytes went,
// a get once its reply is in. The bytes arrive whole.
func TestRequestTest(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{HeapSize: 1 << 20})
	small := pattern(0, 1, 3, 0, 4<<10)
	r, err := ts[0].SendNB(1, 3, small)
	if err != nil {
		t.Fatal(err)
	}
	if err := testUntilDone(t, &r, "eager SendNB"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(small))
	if _, err := ts[1].RecvInto(0, 3, got); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("eager message: %v, equal %v", err, bytes.Equal(got, small))
	}

	big := pattern(0, 1, 4, 1, 4<<20) // above EagerMax: rendezvous
	r, err = ts[0].SendNB(1, 4, big)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if done, err := r.Test(); done || err != nil {
		t.Fatalf("a rendezvous send nobody received: Test = %v, %v; want in progress", done, err)
	}
	recvd := make(chan error, 1)
	gotBig := make([]byte, len(big))
	go func() { _, err := ts[1].RecvInto(0, 4, gotBig); recvd <- err }()
	if err := testUntilDone(t, &r, "rendezvous SendNB"); err != nil {
		t.Fatal(err)
	}
	if err := <-recvd; err != nil || !bytes.Equal(gotBig, big) {
		t.Fatalf("rendezvous message: %v, equal %v", err, bytes.Equal(gotBig, big))
	}

	if err := ts[1].Put(engine.SymmetricBuffer{Rank: 1, Offset: 4096, Len: 8 << 10}, pattern(1, 1, 0, 2, 8<<10)); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 8<<10)
	r, err = ts[0].GetNB(engine.SymmetricBuffer{Rank: 1, Offset: 4096, Len: 8 << 10}, dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := testUntilDone(t, &r, "GetNB"); err != nil {
		t.Fatal(err)
	}
	if err := check(dst, 1, 1, 0, 2, 8<<10); err != nil {
		t.Fatal(err)
	}
}

// TestRequestWaitContext: WaitContext gives up when its ctx ends. A
// rendezvous send nobody asked for is withdrawn (the next message on the
// tag is the one received), a put or an eager send that went out returns
// nil, and a get whose reply has not come is withdrawn: the reply that
// comes later is discarded, and the destination stays untouched.
func TestRequestWaitContext(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{HeapSize: 1 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	first := pattern(0, 1, 6, 0, 2<<20)
	r, err := ts[0].SendNB(1, 6, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitContext of a rendezvous send nobody received: %v, want DeadlineExceeded", err)
	}
	second := pattern(0, 1, 6, 1, 2<<20)
	r, err = ts[0].SendNB(1, 6, second)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(second))
	if _, err := ts[1].RecvInto(0, 6, got); err != nil || !bytes.Equal(got, second) {
		t.Fatalf("after a withdrawn send, the next message: %v, equal to it %v, to the withdrawn one %v", err, bytes.Equal(got, second), bytes.Equal(got, first))
	}
	if err := r.WaitContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := ts[0].PutNB(engine.SymmetricBuffer{Rank: 1, Offset: 0, Len: 64}, pattern(0, 1, 0, 3, 64))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitContext(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put: %v", err)
	}
}

// TestGetWaitContextWithdraws: a get to a rank that has not answered is
// withdrawn when WaitContext's ctx ends; the reply that comes after is
// discarded unread, the destination stays untouched, and the pair goes
// on working.
func TestGetWaitContextWithdraws(t *testing.T) {
	opts := peerOpts()
	w := rawWorld(t, false, opts)
	tr, rp := w.ts[0], w.raw
	const n = 16 << 10
	dst := make([]byte, n)
	r, err := tr.GetNB(engine.SymmetricBuffer{Rank: rawRank, Len: n}, dst)
	if err != nil {
		t.Fatal(err)
	}
	var id uint64
	if !rp.waitFor(10*time.Second, func() bool {
		for _, f := range rp.got {
			if f.h.Kind == frame.KindGetReq {
				req, _ := frame.DecodeGetReq(f.p)
				id = req.ID
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no GET_REQ (raw rank: %v)", rp.deadErr())
	}
	if done, err := r.Test(); done || err != nil || r.Done() {
		t.Fatalf("an unanswered get: Test = %v, %v; want in progress", done, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.WaitContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitContext of an unanswered get: %v, want DeadlineExceeded", err)
	}
	if err := rp.send(0, ctlStreamIndex, frame.Header{Kind: frame.KindGetReply, Offset: id}, bytes.Repeat([]byte{0xbb}, n)); err != nil {
		t.Fatal(err)
	}
	// A get after it, answered on the same (control) stream: once it is
	// in, the late reply was read before it.
	dst2 := make([]byte, n)
	got := make(chan error, 1)
	go func() { got <- tr.Get(engine.SymmetricBuffer{Rank: rawRank, Len: n}, dst2) }()
	var id2 uint64
	if !rp.waitFor(10*time.Second, func() bool {
		for _, f := range rp.got {
			if req, _ := frame.DecodeGetReq(f.p); f.h.Kind == frame.KindGetReq && req.ID != id {
				id2 = req.ID
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no second GET_REQ (raw rank: %v)", rp.deadErr())
	}
	if err := rp.send(0, ctlStreamIndex, frame.Header{Kind: frame.KindGetReply, Offset: id2}, bytes.Repeat([]byte{0xcc}, n)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil || !bytes.Equal(dst2, bytes.Repeat([]byte{0xcc}, n)) {
		t.Fatalf("the get after the late reply: %v, answered right %v", err, bytes.Equal(dst2, bytes.Repeat([]byte{0xcc}, n)))
	}
	if !bytes.Equal(dst, make([]byte, n)) {
		t.Fatal("the withdrawn get's destination was written")
	}
}
