package engine

import (
	"errors"
	"slices"
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

// TestMatcherParks: a tag's queue emptied stays in the map, parked (not
// in use: held does not count it, empty is true), so that the tag's next
// message costs no insert; a second tag's queue emptied takes its place,
// and the first goes back to the free list.
func TestMatcherParks(t *testing.T) {
	var m matcher
	m.init()
	use := func(tag uint32) {
		q := m.queue(tag)
		if m.held.Load() != 1 || m.empty() {
			t.Fatalf("tag %d in use: held %d, empty %v", tag, m.held.Load(), m.empty())
		}
		q.msgs.push(queuedMsg{n: 1})
		q.msgs.pop()
		m.tidy(tag, q)
	}
	for range 3 {
		use(7)
		if len(m.tags) != 1 || m.parked != m.tags[7] || m.held.Load() != 0 || !m.empty() {
			t.Fatalf("after tag 7: %d tags, parked %v, held %d", len(m.tags), m.parked != nil, m.held.Load())
		}
	}
	free := len(m.freeQ)
	use(9)
	if _, ok := m.tags[7]; ok || len(m.tags) != 1 || m.parked != m.tags[9] || len(m.freeQ) != free+1 {
		t.Fatalf("after tag 9: tags %v, free %d (was %d)", m.tags, len(m.freeQ), free)
	}
	// A parked queue taken into use counts again, and tidying it twice
	// counts once.
	q := m.queue(9)
	q.recvs.push(&recvReq{})
	m.tidy(9, q)
	if m.held.Load() != 1 || m.parked != nil {
		t.Fatalf("a queue in use with a receive: held %d, parked %v", m.held.Load(), m.parked != nil)
	}
	q.recvs.pop()
	m.tidy(9, q)
	m.tidy(9, q)
	if m.held.Load() != 0 || m.parked != q {
		t.Fatalf("emptied again: held %d, parked %v", m.held.Load(), m.parked == q)
	}
}

// TestMatcherWaiting: the queues in waiting are exactly those holding
// posted receives, however receives leave (taken by a message, withdrawn,
// failed by failWaiting), and failWaiting looks only at them: with 20000
// tags holding a message each, it fails the one receive it is asked to.
func TestMatcherWaiting(t *testing.T) {
	var m matcher
	m.init()
	check := func(when string) {
		t.Helper()
		n := 0
		for _, q := range m.tags {
			if q.recvs.len() > 0 {
				n++
				if !slices.Contains(m.waiting, q) {
					t.Fatalf("%s: tag %d holds a receive but is not waiting", when, q.tag)
				}
			}
		}
		if n != len(m.waiting) {
			t.Fatalf("%s: %d queues hold receives, %d waiting", when, n, len(m.waiting))
		}
	}
	for u := range uint32(20000) {
		m.queue(1000 + u).msgs.push(queuedMsg{n: 1})
	}
	rs := make([]*recvReq, 4)
	for i := range rs {
		rs[i] = &recvReq{owned: true, done: make(chan struct{}, 1)}
		rs[i].tag = 7 + i%2 // two on tag 7, two on tag 8
		m.postRecv(m.queue(uint32(rs[i].tag)), rs[i])
	}
	check("posted")
	if r := m.offer(m.tags[7], 1); r != rs[0] {
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
	if calls != 2 || len(m.waiting) != 0 {
		t.Fatalf("failWaiting asked about %d receives (want tag 8's 2), %d still waiting", calls, len(m.waiting))
	}
	check("failed")
}

// TestDropQueuedRange: dropQueued drops the messages it is asked to (in
// the range, and unwanted) whichever way it finds them: by looking
// through few tags in use, or by looking up the range's tags among many.
func TestDropQueuedRange(t *testing.T) {
	for _, many := range []bool{false, true} {
		var m matcher
		m.init()
		if many {
			for u := range uint32(5000) {
				m.queue(100000 + u).msgs.push(queuedMsg{n: 1})
			}
		}
		for u := uint32(0); u < 40; u++ {
			m.queue(u).msgs.push(queuedMsg{n: uint64(u) + 1})
		}
		var dropped []uint64
		odd := func(u uint32) bool { return u%2 == 1 }
		m.dropQueued(10, 20, odd, func(msg queuedMsg) { dropped = append(dropped, msg.n) })
		if len(dropped) != 10 {
			t.Fatalf("many %v: dropped %v, want the 10 odd tags in [10, 30)", many, dropped)
		}
		for _, n := range dropped {
			if u := uint32(n - 1); u < 10 || u >= 30 || u%2 != 1 {
				t.Fatalf("many %v: dropped tag %d's message", many, u)
			}
		}
		for u := uint32(0); u < 40; u++ {
			q, ok := m.tags[u]
			kept := ok && q.msgs.len() == 1
			if want := u < 10 || u >= 30 || u%2 == 0; kept != want {
				t.Fatalf("many %v: tag %d kept %v, want %v", many, u, kept, want)
			}
		}
	}
}
