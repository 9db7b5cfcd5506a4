package engine

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/match"
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
		waitPosted(t, p, 1)
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

// TestMatcherWaiting: the queues in waiting are exactly those holding
// posted receives, however receives leave (taken by a message, withdrawn,
// failed by failWaiting), and failWaiting looks only at them: with 20000
// tags holding a message each, it fails the one receive it is asked to.
func TestMatcherWaiting(t *testing.T) {
	var m matcher
	m.Init()
	check := func(when string) {
		t.Helper()
		n := 0
		for _, q := range m.All() {
			if q.Recvs.Len() > 0 {
				n++
				if !slices.Contains(m.Waiting(), q) {
					t.Fatalf("%s: tag %d holds a receive but is not waiting", when, q.Tag)
				}
			}
		}
		if n != len(m.Waiting()) {
			t.Fatalf("%s: %d queues hold receives, %d waiting", when, n, len(m.Waiting()))
		}
	}
	for u := range uint32(20000) {
		m.Queue(1000 + u).Msgs.Push(match.Msg{N: 1})
	}
	rs := make([]*recvReq, 4)
	for i := range rs {
		rs[i] = &recvReq{owned: true, done: make(chan struct{}, 1)}
		rs[i].tag = 7 + i%2 // two on tag 7, two on tag 8
		m.PostRecv(m.Queue(uint32(rs[i].tag)), rs[i])
	}
	check("posted")
	if r := m.offer(m.Lookup(7), 1); r != rs[0] {
		t.Fatal("tag 7's first receive was not offered the message")
	}
	check("one taken")
	if !m.withdraw(rs[1]) {
		t.Fatal("tag 7's second receive was not withdrawn")
	}
	check("one withdrawn")
	calls := 0
	m.failWaiting(func(u uint32) bool { return true }, func(u uint32, r *recvReq) error {
		calls++
		return errors.New("conflict")
	})
	if calls != 2 || len(m.Waiting()) != 0 {
		t.Fatalf("failWaiting asked about %d receives (want tag 8's 2), %d still waiting", calls, len(m.Waiting()))
	}
	check("failed")
}

// waitPosted waits until n receives are posted for p's messages.
func waitPosted(t *testing.T, p *peer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		posted := p.m.Posted()
		p.mu.Unlock()
		if posted == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d receives posted, want %d", posted, n)
		}
	}
}
