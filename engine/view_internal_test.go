package engine

import (
	"errors"
	"io"
	"testing"
)

// TestViewCopyOnWrite: a change publishes a new view with the next epoch
// and leaves the one it replaces as it was, its next channel closed; a
// departure already known changes nothing, and wakes nobody.
func TestViewCopyOnWrite(t *testing.T) {
	tr := newNetTransport(0, 4, Options{})
	v0 := tr.view()
	tr.noteLoss(2, io.EOF)
	v1 := tr.view()
	if v1 == v0 || v1.epoch != 1 || v1.member(2) || !v1.member(1) {
		t.Fatalf("after a loss: epoch %d, rank 2 member %v", v1.epoch, v1.member(2))
	}
	if v0.epoch != 0 || !v0.member(2) || len(v0.left) != 0 || v0.loss.first != -1 || v0.broken != -1 {
		t.Fatalf("the replaced view changed: %+v", v0)
	}
	select {
	case <-v0.next:
	default:
		t.Fatal("the replaced view's next is open")
	}
	select {
	case <-v1.next:
		t.Fatal("the current view's next is closed")
	default:
	}
	err := v1.lostErr("barrier")
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Rank != 2 || pe.Op != "barrier" || !errors.Is(err, ErrPeerLost) || !errors.Is(err, io.EOF) {
		t.Fatalf("lostErr: %v", err)
	}
	tr.noteLoss(2, io.ErrUnexpectedEOF) // the same loss again
	tr.noteClosed(1, 4, 9, -1)
	tr.noteClosed(1, 4, 9, -1) // the same close again
	v2 := tr.view()
	if v2.epoch != 2 || v2.member(1) || len(v2.left) != 2 || v2.left[1] != (departure{rank: 1, closed: true, ownerDone: 9}) {
		t.Fatalf("after a close and two repeats: epoch %d, left %+v", v2.epoch, v2.left)
	}
	if err := v2.closedBefore(4, "barrier"); err != nil {
		t.Fatalf("barrier 4, which rank 1 completed: %v", err)
	}
	if err := v2.closedBefore(5, "barrier"); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("barrier 5, after rank 1 closed: %v, want ErrPeerClosed", err)
	}
	if err := v2.lostErr("x"); !errors.Is(err, io.EOF) {
		t.Fatalf("the first loss's cause changed: %v", err)
	}
	if len(v1.left) != 1 || len(v1.loss.closedAfter) != 0 {
		t.Fatalf("view 1 changed: %+v", v1)
	}
}
