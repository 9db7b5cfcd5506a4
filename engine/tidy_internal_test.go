package engine

import (
	"testing"

	"github.com/boltmesh/boltmesh/ioloop"
)

// TestTidyKeepsOneIdleQueue: a tag used message after message keeps its
// queue in the map (no delete and insert per message), a second tag
// that empties takes its place, and empty() reports the matcher empty
// whenever only the idle queue is left.
func TestTidyKeepsOneIdleQueue(t *testing.T) {
	var m matcher
	m.init()
	post := func(tag uint32) {
		q := m.queue(tag)
		m.postRecv(q, &recvReq{tag: int(tag)})
	}
	take := func(tag uint32) {
		q := m.tags[tag]
		if _, ok := m.popRecv(q); !ok {
			t.Fatalf("tag %d: no receive posted", tag)
		}
		m.tidy(tag, q)
	}
	post(7)
	q7 := m.tags[7]
	take(7)
	if m.tags[7] != q7 || !m.empty() {
		t.Fatalf("after one message: tags %v, empty %v; want tag 7's queue kept and the matcher empty", m.tags, m.empty())
	}
	for range 100 {
		post(7)
		if m.empty() {
			t.Fatal("empty() with a receive posted")
		}
		take(7)
	}
	if len(m.tags) != 1 || m.tags[7] != q7 || !m.empty() {
		t.Fatalf("after 100 messages: %d tags, same queue %v, empty %v", len(m.tags), m.tags[7] == q7, m.empty())
	}
	post(8)
	post(7) // tag 7's idle queue is in use again
	take(8) // tag 8 empties: 7 stays, being in use
	if len(m.tags) != 2 || m.empty() {
		t.Fatalf("tags %v, empty %v; want both tags, not empty", m.tags, m.empty())
	}
	take(7) // 7 empties: idle 8 goes
	if _, ok := m.tags[8]; ok || len(m.tags) != 1 || !m.empty() {
		t.Fatalf("tags %v, empty %v; want tag 7 alone, idle", m.tags, m.empty())
	}
}

// TestTidyTagsUsedOnce: tags used once each (a collective's) do not pile
// up in the map.
func TestTidyTagsUsedOnce(t *testing.T) {
	var m matcher
	m.init()
	for tag := uint32(0); tag < 1000; tag++ {
		q := m.queue(tag)
		m.hold(q, queuedMsg{bb: ioloop.GetBuffer(8)})
		m.tidy(tag, q)
		msg, _ := q.msgs.peek()
		m.takeHead(q)
		ioloop.PutBuffer(msg.bb)
		m.tidy(tag, q)
	}
	if len(m.tags) > 1 || !m.empty() {
		t.Fatalf("%d tags left after 1000 used once, empty %v; want at most the idle one", len(m.tags), m.empty())
	}
}

// TestTidyHeldQueueStays: a queue handed out by queue() for the caller
// to add to is not dropped from the map by a tidy of another tag
// meanwhile, even when it was the idle one: what the caller adds stays
// findable under its tag (a collective's bookkeeping tidies other tags
// between the two).
func TestTidyHeldQueueStays(t *testing.T) {
	var m matcher
	m.init()
	q7 := m.queue(7)
	m.postRecv(q7, &recvReq{tag: 7})
	m.popRecv(q7)
	m.tidy(7, q7) // 7 idle
	held := m.queue(7)
	q8 := m.queue(8)
	m.tidy(8, q8) // 8 empties: it becomes the idle one, and must not drop 7
	m.hold(held, queuedMsg{bb: ioloop.GetBuffer(8)})
	if m.tags[7] != held || held.msgs.len() != 1 {
		t.Fatalf("tag 7's queue in the map %p, held %p with %d messages; want it kept", m.tags[7], held, held.msgs.len())
	}
	if m.empty() {
		t.Fatal("empty() with a message queued")
	}
	msg, _ := held.msgs.pop()
	ioloop.PutBuffer(msg.bb)
}
