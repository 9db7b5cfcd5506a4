package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// TestViewFollowsDepartures: on a real 4-rank mesh, rank 0's membership
// view starts at epoch 0 with every rank; a cut link takes rank 1 out of
// the next view, and rank 3's orderly close out of the one after; each
// change wakes whoever waits on the view it replaces, and an operation
// addressed to a rank that left still fails with how it left.
func TestViewFollowsDepartures(t *testing.T) {
	ts, faults := faultyMesh(t, 4, engine.Options{Streams: 1})
	epoch, members, left, next := engine.View(ts[0])
	if epoch != 0 || !slices.Equal(members, []int{0, 1, 2, 3}) || left != nil {
		t.Fatalf("first view: epoch %d, members %v, left %v", epoch, members, left)
	}
	for _, f := range linkOf(faults, 0, 1) {
		f.Cut()
	}
	select {
	case <-next:
	case <-time.After(10 * time.Second):
		t.Fatal("no view change 10 s after the link to rank 1 was cut")
	}
	awaitLoss(t, ts[0], 1, 10*time.Second)
	epoch, members, left, next = engine.View(ts[0])
	if epoch != 1 || !slices.Equal(members, []int{0, 2, 3}) || !slices.Equal(left, []int{1}) {
		t.Fatalf("after the cut: epoch %d, members %v, left %v; want 1, [0 2 3], [1]", epoch, members, left)
	}
	if err := ts[0].Send(1, 5, []byte("x")); !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("a send to the rank that left: %v, want ErrPeerLost", err)
	}
	if err := ts[3].Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-next:
	case <-time.After(10 * time.Second):
		t.Fatal("no view change 10 s after rank 3 closed")
	}
	epoch, members, left, _ = engine.View(ts[0])
	if epoch != 2 || !slices.Equal(members, []int{0, 2}) || !slices.Equal(left, []int{1, 3}) {
		t.Fatalf("after rank 3 closed: epoch %d, members %v, left %v; want 2, [0 2], [1 3]", epoch, members, left)
	}
	// The view changes as the GOODBYE arrives; the peer is lost once its
	// connection closes after it.
	awaitLoss(t, ts[0], 3, 10*time.Second)
	err := engine.PeerLost(ts[0], 3)
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrPeerClosed) {
		t.Fatalf("rank 3 left with %v, want ErrPeerLost for ErrPeerClosed", err)
	}
	pingPong(t, ts[0], ts[2])
}
