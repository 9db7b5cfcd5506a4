package view

import (
	"errors"
	"io"
	"slices"
	"testing"
)

// TestChangeCopiesOnWrite: a change publishes a new view with the next
// epoch and leaves the one it replaces as it was, its Next channel
// closed; a departure already known changes nothing, and wakes nobody.
func TestChangeCopiesOnWrite(t *testing.T) {
	var m Members[int]
	m.Start([]int{10, 11, 12, 13})
	v0 := m.Load()
	if !m.Lost(2, io.EOF) {
		t.Fatal("rank 2's first loss: not a departure")
	}
	v1 := m.Load()
	if v1 == v0 || v1.Epoch != 1 || v1.Member(2) || !v1.Member(1) || v1.Member(4) || v1.Member(-1) || v1.Broken != 2 {
		t.Fatalf("after a loss: epoch %d, rank 2 member %v, broken %d", v1.Epoch, v1.Member(2), v1.Broken)
	}
	if v0.Epoch != 0 || !v0.Member(2) || len(v0.Left) != 0 || v0.Loss.First != -1 || v0.Broken != -1 {
		t.Fatalf("the replaced view changed: %+v", v0)
	}
	select {
	case <-v0.Next:
	default:
		t.Fatal("the replaced view's Next is open")
	}
	if m.Lost(2, io.ErrUnexpectedEOF) {
		t.Fatal("rank 2's second loss: a departure again")
	}
	m.Closed(1, 4, 9, -1)
	m.Closed(1, 4, 9, -1)
	v2 := m.Load()
	select {
	case <-v2.Next:
		t.Fatal("the current view's Next is closed")
	default:
	}
	if v2.Epoch != 2 || len(v2.Left) != 2 || v2.Left[1] != (Departure{Rank: 1, Closed: true, OwnerDone: 9}) || v2.ClosedBarriers != 4 || v2.ClosedRank != 1 {
		t.Fatalf("after a close and two repeats: %+v", v2)
	}
	if d := v2.Departed(2); d == nil || !errors.Is(d.Cause, io.EOF) || d.Closed {
		t.Fatalf("rank 2's departure: %+v", d)
	}
	if len(v1.Left) != 1 || len(v1.Loss.ClosedAfter) != 0 {
		t.Fatalf("view 1 changed: %+v", v1)
	}
}

// TestLossReportedThenSeen: the first loss a goodbye reports stands until
// a later report, and is marked seen (its cause) once this rank sees the
// connection break; the peers that closed after it are kept in order.
func TestLossReportedThenSeen(t *testing.T) {
	var m Members[int]
	m.Start(make([]int, 5))
	m.Closed(1, 0, 0, 3)
	m.Closed(2, 0, 0, 4) // a later report does not replace the first
	l := m.Load().Loss
	if l.First != 3 || !l.Reported || l.Cause != nil || !slices.Equal(l.ClosedAfter, []int{1, 2}) {
		t.Fatalf("after two reports: %+v", l)
	}
	m.Lost(4, io.EOF) // another rank's loss
	m.Lost(3, io.ErrUnexpectedEOF)
	l = m.Load().Loss
	if l.First != 3 || l.Reported || l.Cause != io.ErrUnexpectedEOF {
		t.Fatalf("after rank 3 is seen lost: %+v", l)
	}
}
