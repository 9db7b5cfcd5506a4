package match

import "testing"

// TestMatcherParks: a tag's queue emptied stays in the map, parked (not
// in use: held does not count it, Empty is true), so that the tag's next
// message costs no insert; a second tag's queue emptied takes its place,
// and the first goes back to the free list.
func TestMatcherParks(t *testing.T) {
	var m Matcher[*int]
	m.Init()
	use := func(tag uint32) {
		q := m.Queue(tag)
		if m.held.Load() != 1 || m.Empty() {
			t.Fatalf("tag %d in use: held %d, empty %v", tag, m.held.Load(), m.Empty())
		}
		q.Msgs.Push(Msg{N: 1})
		q.Msgs.Pop()
		m.Tidy(tag, q)
	}
	for range 3 {
		use(7)
		if len(m.tags) != 1 || m.parked != m.tags[7] || m.held.Load() != 0 || !m.Empty() {
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
	q := m.Queue(9)
	q.Recvs.Push(new(int))
	m.Tidy(9, q)
	if m.held.Load() != 1 || m.parked != nil {
		t.Fatalf("a queue in use with a receive: held %d, parked %v", m.held.Load(), m.parked != nil)
	}
	q.Recvs.Pop()
	m.Tidy(9, q)
	m.Tidy(9, q)
	if m.held.Load() != 0 || m.parked != q {
		t.Fatalf("emptied again: held %d, parked %v", m.held.Load(), m.parked == q)
	}
}

// TestDropQueuedRange: DropQueued drops the messages it is asked to (in
// the range, and unwanted) whichever way it finds them: by looking
// through few tags in use, or by looking up the range's tags among many.
func TestDropQueuedRange(t *testing.T) {
	for _, many := range []bool{false, true} {
		var m Matcher[*int]
		m.Init()
		if many {
			for u := range uint32(5000) {
				m.Queue(100000 + u).Msgs.Push(Msg{N: 1})
			}
		}
		for u := uint32(0); u < 40; u++ {
			m.Queue(u).Msgs.Push(Msg{N: uint64(u) + 1})
		}
		var dropped []uint64
		odd := func(u uint32) bool { return u%2 == 1 }
		m.DropQueued(10, 20, odd, func(msg Msg) { dropped = append(dropped, msg.N) })
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
			kept := ok && q.Msgs.Len() == 1
			if want := u < 10 || u >= 30 || u%2 == 0; kept != want {
				t.Fatalf("many %v: tag %d kept %v, want %v", many, u, kept, want)
			}
		}
	}
}
