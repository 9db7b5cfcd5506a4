package collective

import (
	"bytes"
	"context"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// collTagOf is the collective tag of step of call number call (as package
// collective numbers calls: 1, 2, ...).
func collTagOf(call, step uint32) uint32 {
	return (call-1)%callSlots*tagsPerCall + step
}

// TestStaleCollDropped: once a call is over on the receiving rank, the
// messages of that call are dropped, those queued before the next call
// begins and those that arrive later, while the messages of the call in
// progress and of calls ahead of it are kept.
func TestStaleCollDropped(t *testing.T) {
	ts := meshtest.Mesh(t, 2, engine.Options{})
	ctx := context.Background()
	send := func(call, step uint32, b byte) {
		t.Helper()
		if err := hooksOf(ts[1]).SendMsg(ctx, 0, collTagOf(call, step), 7, []byte{b, b, b}); err != nil {
			t.Fatal(err)
		}
	}
	// fence returns once every message rank 1 sent before it has arrived
	// (a connection delivers in order).
	fence := func() {
		t.Helper()
		if err := ts[1].Send(0, 9, []byte{9}); err != nil {
			t.Fatal(err)
		}
		if b, err := ts[0].Recv(1, 9); err != nil || !bytes.Equal(b, []byte{9}) {
			t.Fatalf("fence: %v %v", b, err)
		}
	}
	recv := func(call, step uint32, want byte) {
		t.Helper()
		buf := make([]byte, 3)
		n, err := hooksOf(ts[0]).Recv(ctx, 1, collTagOf(call, step), 7, buf)
		if err != nil || n != 3 || !bytes.Equal(buf, []byte{want, want, want}) {
			t.Fatalf("call %d step %d: got %d bytes %v (%v), want 3 of %d", call, step, n, buf[:n], err, want)
		}
	}
	callsOfNet(ts[0]).begin(1)
	send(1, 0, 1) // a call 1 message nobody receives: the call failed here
	send(1, 1, 2)
	send(2, 0, 3) // rank 1 is ahead
	fence()
	callsOfNet(ts[0]).begin(2)
	send(1, 2, 4) // arrives late for call 1
	fence()
	recv(2, 0, 3) // the queued message of the call ahead was kept
	for step := range uint32(3) {
		if _, ok, err := hooksOf(ts[0]).TryRecv(1, collTagOf(1, step), 7, make([]byte, 3)); ok || err != nil {
			t.Errorf("call 1 step %d: a message of the ended call was kept (ok %v, err %v)", step, ok, err)
		}
	}
	// Call 1's tags come round again at call 1+65536, and work there.
	next := uint32(1 + callSlots)
	callsOfNet(ts[0]).begin(next)
	send(next, 0, 6)
	recv(next, 0, 6)
}
