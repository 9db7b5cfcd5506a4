package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
)

// TestClaimedReceiveLostMidRead: an eager payload is being read into a
// posted receive when the peer is lost (its heartbeat check, or Close,
// fails the receive meanwhile). The receive returns only once nothing
// reads into its buffer any more: with the message, if the frame then
// finishes, or with the loss, if its stream ends first. Nothing panics.
// The frame's steps are driven by hand, as the event loop runs them.
func TestClaimedReceiveLostMidRead(t *testing.T) {
	for _, whole := range []bool{true, false} {
		ts := pair(t, Options{})
		p := ts[0].peer(1)
		done := make(chan error, 1)
		buf := make([]byte, 64)
		go func() {
			_, err := ts[0].RecvInto(1, 7, buf)
			done <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			p.mu.Lock()
			posted := p.m.posted
			p.mu.Unlock()
			if posted == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the receive was never posted")
			}
		}
		h := frame.Header{Kind: frame.KindSend, Src: 1, Tag: 7, Length: 8}
		dst := kinds[frame.KindSend].payload(p, nil, laneData, &h)
		if len(dst) != 8 {
			t.Fatalf("payload named %d bytes, want the posted receive's 8", len(dst))
		}
		lost := errors.New("test: lost while the payload is read")
		p.lose(lost)
		select {
		case err := <-done:
			t.Fatalf("the receive returned (%v) while its payload was being read", err)
		case <-time.After(20 * time.Millisecond):
		}
		copy(dst, "8 bytes!")
		if whole {
			kinds[frame.KindSend].arrive(p, nil, laneData, &h, dst, nil)
		} else {
			p.readEnded(laneData, lost)
		}
		select {
		case err := <-done:
			var pe *PeerError
			switch {
			case whole && (err != nil || string(buf[:8]) != "8 bytes!"):
				t.Fatalf("receive of a message that came whole: %v, %q", err, buf[:8])
			case !whole && (!errors.Is(err, ErrPeerLost) || !errors.Is(err, lost) || !errors.As(err, &pe) || pe.Rank != 1):
				t.Fatalf("receive whose read ended unfinished: %v, want the loss of rank 1", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the receive never returned")
		}
	}
}
