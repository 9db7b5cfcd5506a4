package engine

import (
	"errors"
	"io"
	"testing"

	"github.com/boltmesh/boltmesh/internal/view"
)

// TestViewCopyOnWrite: a change publishes a new view with the next epoch
// and leaves the one it replaces as it was, its next channel closed; a
// departure already known changes nothing, and wakes nobody.
func TestViewCopyOnWrite(t *testing.T) {
	tr := newNetTransport(0, 4, Options{})
	v0 := tr.view()
	tr.noteLoss(2, io.EOF)
	v1 := tr.view()
	if v1 == v0 || v1.Epoch != 1 || v1.Member(2) || !v1.Member(1) {
		t.Fatalf("after a loss: epoch %d, rank 2 member %v", v1.Epoch, v1.Member(2))
	}
	if v0.Epoch != 0 || !v0.Member(2) || len(v0.Left) != 0 || v0.Loss.First != -1 || v0.Broken != -1 {
		t.Fatalf("the replaced view changed: %+v", v0)
	}
	select {
	case <-v0.Next:
	default:
		t.Fatal("the replaced view's next is open")
	}
	select {
	case <-v1.Next:
		t.Fatal("the current view's next is closed")
	default:
	}
	err := lostErr(v1, "barrier")
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Rank != 2 || pe.Op != "barrier" || !errors.Is(err, ErrPeerLost) || !errors.Is(err, io.EOF) {
		t.Fatalf("lostErr: %v", err)
	}
	tr.noteLoss(2, io.ErrUnexpectedEOF) // the same loss again
	tr.noteClosed(1, 4, 9, -1)
	tr.noteClosed(1, 4, 9, -1) // the same close again
	v2 := tr.view()
	if v2.Epoch != 2 || v2.Member(1) || len(v2.Left) != 2 || v2.Left[1] != (view.Departure{Rank: 1, Closed: true, OwnerDone: 9}) {
		t.Fatalf("after a close and two repeats: epoch %d, left %+v", v2.Epoch, v2.Left)
	}
	if err := closedBefore(v2, 4, "barrier"); err != nil {
		t.Fatalf("barrier 4, which rank 1 completed: %v", err)
	}
	if err := closedBefore(v2, 5, "barrier"); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("barrier 5, after rank 1 closed: %v, want ErrPeerClosed", err)
	}
	if err := lostErr(v2, "x"); !errors.Is(err, io.EOF) {
		t.Fatalf("the first loss's cause changed: %v", err)
	}
	if len(v1.Left) != 1 || len(v1.Loss.ClosedAfter) != 0 {
		t.Fatalf("view 1 changed: %+v", v1)
	}
}
