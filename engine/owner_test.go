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

// testOwner is an owner of the collective tags whose answers a test sets:
// tags in unwanted are dropped, a receive for a tag in refused fails with
// errRefused, a receive for tag conflictTag fails with errConflict once a
// message for conflictWith is queued, and the abandons it hears of are
// recorded (after one, every receive from that rank is refused).
type testOwner struct {
	unwanted     map[uint32]bool
	refused      map[uint32]bool
	conflictTag  uint32
	conflictWith uint32
	progress     uint32
	closedBelow  uint32 // Closed(p) for p < closedBelow

	mu       sync.Mutex
	abandons []ownerAbandon
	closed   []uint32 // the progress values Closed was asked of
}

type ownerAbandon struct {
	from int
	tag  uint32
	why  uint64
}

var (
	errRefused  = errors.New("refused by the owner")
	errConflict = errors.New("a conflict, says the owner")
)

func (o *testOwner) Wanted(_ int, tag uint32) bool { return !o.unwanted[tag] }

func (o *testOwner) Posting(from int, tag, _ uint32) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range o.abandons {
		if a.from == from {
			return errRefused
		}
	}
	if o.refused[tag] {
		return errRefused
	}
	return nil
}

func (o *testOwner) Conflict(_ int, tag, _, arrived, _ uint32) error {
	if tag == o.conflictTag && arrived == o.conflictWith {
		return errConflict
	}
	return nil
}

func (o *testOwner) Abandoned(from int, tag uint32, why uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.abandons = append(o.abandons, ownerAbandon{from, tag, why})
}

func (o *testOwner) Progress() uint32 { return o.progress }

func (o *testOwner) Closed(p uint32) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = append(o.closed, p)
	return p < o.closedBelow
}

// own installs o as tr's owner of the collective tags.
func own(t *testing.T, tr *engine.NetTransport, o *testOwner) {
	t.Helper()
	if got := hooks(tr).OwnColl(func() plumb.CollOwner { return o }); got != o {
		t.Fatalf("OwnColl installed %v, want the test's owner", got)
	}
	other := &testOwner{}
	if got := hooks(tr).OwnColl(func() plumb.CollOwner { return other }); got != o {
		t.Fatalf("a second OwnColl installed %v, want the first owner kept", got)
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
// they arrive and, on DropUnwanted, those queued; the others are kept.
func TestCollOwnerDrops(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{})
	ctx := context.Background()
	o := &testOwner{unwanted: map[uint32]bool{3: true}}
	own(t, ts[0], o)
	for _, tag := range []uint32{3, 4, 5} {
		if err := hooks(ts[1]).SendColl(ctx, 0, tag, 7, []byte{byte(tag)}); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte{6}, 1<<20) // a rendezvous message
	if err := hooks(ts[1]).SendColl(ctx, 0, 3, 7, big); err != nil {
		t.Fatal(err)
	}
	collFence(t, ts)
	if _, ok, err := hooks(ts[0]).TryRecvCollInto(1, 3, 7, make([]byte, 1<<20)); ok || err != nil {
		t.Fatalf("tag 3: a message the owner does not want was kept (ok %v, err %v)", ok, err)
	}
	o.unwanted[4] = true // only while nothing arrives: the owner's answers are read under the peer's lock
	hooks(ts[0]).DropUnwanted(0, plumb.CollTags)
	if _, ok, err := hooks(ts[0]).TryRecvCollInto(1, 4, 7, make([]byte, 1)); ok || err != nil {
		t.Fatalf("tag 4: a queued message DropUnwanted should drop was kept (ok %v, err %v)", ok, err)
	}
	buf := make([]byte, 1)
	if n, ok, err := hooks(ts[0]).TryRecvCollInto(1, 5, 7, buf); !ok || err != nil || n != 1 || buf[0] != 5 {
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
	o := &testOwner{refused: map[uint32]bool{4: true}, conflictTag: 10, conflictWith: 11}
	own(t, ts[0], o)
	if _, err := hooks(ts[0]).RecvCollInto(ctx, 1, 4, 7, make([]byte, 1)); !errors.Is(err, errRefused) {
		t.Fatalf("refused receive: %v, want errRefused", err)
	}
	// The conflicting message arrives while the receive waits.
	got := make(chan error, 1)
	go func() {
		_, err := hooks(ts[0]).RecvCollInto(ctx, 1, 10, 7, make([]byte, 1))
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // the receive posts (if not, it finds the message queued: the same error)
	if err := hooks(ts[1]).SendColl(ctx, 0, 11, 7, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, errConflict) {
		t.Fatalf("receive waiting when a conflicting message came: %v, want errConflict", err)
	}
	// The conflicting message (still queued) is there when it is posted.
	if _, err := hooks(ts[0]).RecvCollInto(ctx, 1, 10, 7, make([]byte, 1)); !errors.Is(err, errConflict) {
		t.Fatalf("receive posted after a conflicting message: %v, want errConflict", err)
	}
	// An abandon fails the receive waiting, and the owner hears of it.
	go func() {
		_, err := hooks(ts[0]).RecvCollInto(ctx, 1, 20, 7, make([]byte, 1))
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	hooks(ts[1]).AbandonColl(21, 99)
	if err := <-got; !errors.Is(err, errRefused) {
		t.Fatalf("receive waiting when an abandon came: %v, want the owner's errRefused", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.abandons) != 1 || o.abandons[0] != (ownerAbandon{1, 21, 99}) {
		t.Fatalf("the owner heard of abandons %+v, want rank 1's on tag 21 with why 99", o.abandons)
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
	o := &testOwner{closedBelow: 43}
	own(t, ts[0], o)
	own(t, ts[1], &testOwner{progress: 42})
	got := make(chan error, 1)
	go func() {
		_, err := hooks(ts[0]).RecvCollInto(ctx, 2, 5, 7, make([]byte, 1))
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ts[1].Close()
	err := <-got
	var pe *engine.PeerError
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrPeerClosed) || !errors.As(err, &pe) || pe.Rank != 1 {
		t.Fatalf("receive from rank 2 after rank 1 closed: %v, want rank 1's ErrPeerLost (ErrPeerClosed)", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.closed) == 0 || o.closed[0] != 42 {
		t.Fatalf("the owner was asked Closed of %v, want rank 1's progress 42", o.closed)
	}
}
