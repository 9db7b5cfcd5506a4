package engine_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/internal/plumb/plumbtest"
)

// testOwner is an owner of the collective tags whose answers a test sets:
// tags in unwanted are dropped, a receive for a tag in refused fails with
// plumbtest.ErrRefused, a receive for tag conflictTag fails with plumbtest.ErrConflict once a
// message for conflictWith is queued, and the abandons it hears of are
// own installs o as tr's owner of the lent range.
func own(t *testing.T, tr *engine.NetTransport, o *plumbtest.Owner) {
	t.Helper()
	if got := hooks(tr).Lend("test", func() plumb.Owner { return o }); got != o {
		t.Fatalf("Lend installed %v, want the test's owner", got)
	}
	other := &plumbtest.Owner{}
	if got := hooks(tr).Lend("test", func() plumb.Owner { return other }); got != o {
		t.Fatalf("a second Lend installed %v, want the first owner kept", got)
	}
}

// collFence returns once every message rank 1 of ts sent to rank 0 before
// it has arrived (a connection delivers in order).
func collFence(t *testing.T, ts []*engine.NetTransport) {
	t.Helper()
	if err := ts[1].Send(0, 9, []byte{9}); err != nil {
		t.Fatal(err)
	}
	if b, err := ts[0].Recv(1, 9); err != nil || !bytes.Equal(b, []byte{9}) {
		t.Fatalf("fence: %v %v", b, err)
	}
}

// TestCollOwnerDrops: the messages the owner does not want are dropped as
// they arrive and, on Forget, those queued; the others are kept.
func TestCollOwnerDrops(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{})
	ctx := context.Background()
	o := &plumbtest.Owner{Unwanted: map[uint32]bool{3: true}}
	own(t, ts[0], o)
	for _, tag := range []uint32{3, 4, 5} {
		if err := hooks(ts[1]).SendMsg(ctx, 0, tag, 7, []byte{byte(tag)}); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte{6}, 1<<20) // a rendezvous message
	if err := hooks(ts[1]).SendMsg(ctx, 0, 3, 7, big); err != nil {
		t.Fatal(err)
	}
	collFence(t, ts)
	if _, ok, err := hooks(ts[0]).TryRecv(1, 3, 7, make([]byte, 1<<20)); ok || err != nil {
		t.Fatalf("tag 3: a message the owner does not want was kept (ok %v, err %v)", ok, err)
	}
	o.Unwanted[4] = true // only while nothing arrives: the owner's answers are read under the peer's lock
	hooks(ts[0]).Forget(0, plumb.Tags)
	if _, ok, err := hooks(ts[0]).TryRecv(1, 4, 7, make([]byte, 1)); ok || err != nil {
		t.Fatalf("tag 4: a queued message Forget should drop was kept (ok %v, err %v)", ok, err)
	}
	buf := make([]byte, 1)
	if n, ok, err := hooks(ts[0]).TryRecv(1, 5, 7, buf); !ok || err != nil || n != 1 || buf[0] != 5 {
		t.Fatalf("tag 5: got %d bytes %v, ok %v, err %v; want the message kept", n, buf, ok, err)
	}
}

// TestCollOwnerFails: a receive fails with the owner's error when the
// owner refuses it as it is posted, when a conflicting message arrives
// while it waits or was queued before it, and once the sender's ABANDON
// arrived, which the owner hears of with its tag and why.
func TestCollOwnerFails(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := &plumbtest.Owner{Refused: map[uint32]bool{4: true}, ConflictTag: 10, ConflictWith: 11}
	own(t, ts[0], o)
	if _, err := hooks(ts[0]).Recv(ctx, 1, 4, 7, make([]byte, 1)); !errors.Is(err, plumbtest.ErrRefused) {
		t.Fatalf("refused receive: %v, want plumbtest.ErrRefused", err)
	}
	// The conflicting message arrives while the receive waits.
	got := make(chan error, 1)
	go func() {
		_, err := hooks(ts[0]).Recv(ctx, 1, 10, 7, make([]byte, 1))
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // the receive posts (if not, it finds the message queued: the same error)
	if err := hooks(ts[1]).SendMsg(ctx, 0, 11, 7, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, plumbtest.ErrConflict) {
		t.Fatalf("receive waiting when a conflicting message came: %v, want plumbtest.ErrConflict", err)
	}
	// The conflicting message (still queued) is there when it is posted.
	if _, err := hooks(ts[0]).Recv(ctx, 1, 10, 7, make([]byte, 1)); !errors.Is(err, plumbtest.ErrConflict) {
		t.Fatalf("receive posted after a conflicting message: %v, want plumbtest.ErrConflict", err)
	}
	// An abandon fails the receive waiting, and the owner hears of it.
	go func() {
		_, err := hooks(ts[0]).Recv(ctx, 1, 20, 7, make([]byte, 1))
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	hooks(ts[1]).Tell(21, 99)
	if err := <-got; !errors.Is(err, plumbtest.ErrRefused) {
		t.Fatalf("receive waiting when an abandon came: %v, want the owner's plumbtest.ErrRefused", err)
	}
	if ab := o.Abandons(); len(ab) != 1 || ab[0] != (plumbtest.Abandon{From: 1, Tag: 21, Why: 99}) {
		t.Fatalf("the owner heard of abandons %+v, want rank 1's on tag 21 with why 99", ab)
	}
}

// TestCollOwnerProgress: a closing rank's GOODBYE carries its owner's
// progress, which a peer's owner is asked about: a collective receive
// waiting on a third rank gives up (ErrPeerClosed) when the owner says the
// closed peer left it unanswerable.
func TestCollOwnerProgress(t *testing.T) {
	ts := newMesh(t, 3, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := &plumbtest.Owner{ClosedBelow: 43}
	own(t, ts[0], o)
	own(t, ts[1], &plumbtest.Owner{Done: 42})
	got := make(chan error, 1)
	go func() {
		_, err := hooks(ts[0]).Recv(ctx, 2, 5, 7, make([]byte, 1))
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ts[1].Close()
	err := <-got
	var pe *engine.PeerError
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrPeerClosed) || !errors.As(err, &pe) || pe.Rank != 1 {
		t.Fatalf("receive from rank 2 after rank 1 closed: %v, want rank 1's ErrPeerLost (ErrPeerClosed)", err)
	}
	if cl := o.Closed(); len(cl) == 0 || cl[0] != 42 {
		t.Fatalf("the owner judged Closed of %v, want rank 1's progress 42", cl)
	}
}
