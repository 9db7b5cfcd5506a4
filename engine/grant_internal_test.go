package engine

import (
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
)

// TestGrantWaitsForDrainEnd: a grant that a read upcall makes due (an
// eager SEND read straight into its posted receive, releasing a quarter
// of the window) is recorded, not written from the upcall; the drain's
// end (the handler's Drained) writes it, once, and the peer's total
// grows by it. The frame's steps are driven by hand, as the event loop
// runs them.
func TestGrantWaitsForDrainEnd(t *testing.T) {
	const window = 1 << 20
	ts := pair(t, Options{MaxQueuedBytes: window, KeepAlive: time.Hour}) // no heartbeat drains the stream meanwhile
	p := ts[0].peer(1)
	sender := &ts[1].peer(0).out
	for deadline := time.Now().Add(10 * time.Second); sender.Window() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the window never opened")
		}
	}
	before := sender.Granted()
	const n = window / 4
	done := make(chan error, 1)
	buf := make([]byte, n)
	go func() {
		_, err := ts[0].RecvInto(1, 7, buf)
		done <- err
	}()
	waitPosted(t, p, 1)
	h := frame.Header{Kind: frame.KindSend, Src: 1, Tag: 7, Length: n}
	c := p.link.(*meshLink).conn(laneData)
	dst := kinds[frame.KindSend].payload(p, c, laneData, &h)
	if len(dst) != n {
		t.Fatalf("payload named %d bytes, want the posted receive's %d", len(dst), n)
	}
	kinds[frame.KindSend].arrive(p, c, laneData, &h, dst, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if due := p.grantDue.Load(); due < before+frame.Cost(n) {
		t.Fatalf("grant recorded %d, want at least %d", due, before+frame.Cost(n))
	}
	time.Sleep(30 * time.Millisecond)
	if got := sender.Granted(); got != before {
		t.Fatalf("the upcall wrote a grant: the peer's total went from %d to %d before the drain ended", before, got)
	}
	(&meshStream{l: p.link.(*meshLink), lane: laneData}).Drained(c)
	for deadline := time.Now().Add(10 * time.Second); sender.Granted() < before+frame.Cost(n); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the drain's end the peer's total is %d, want %d", sender.Granted(), before+frame.Cost(n))
		}
	}
	if due := p.grantDue.Load(); due != 0 {
		t.Fatalf("%d still recorded after the drain's end", due)
	}
}
