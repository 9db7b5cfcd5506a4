package collective

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// unowned is a plumb.Wire with no transport behind it, for a calls
// tested alone.
type unowned struct{ plumb.Wire }

func (unowned) Lend(_ string, newOwner func() plumb.Owner) plumb.Owner { return newOwner() }
func (unowned) Tell(uint32, uint64)                                    {}
func (unowned) Forget(uint32, uint32)                                  {}

// TestAbandonedNotes: a peer's abandons fail receives for the calls they
// named only, every one of them (a peer may give up several calls before
// this rank reaches the first), until this rank begins a later call, so
// that the calls' tags, reused later, work again.
func TestAbandonedNotes(t *testing.T) {
	tr := &calls{wire: unowned{}, abandoned: make([][]abandonNote, 4)}
	// Call k owns slot k-1 of the tag space.
	tag := func(call, step uint32) uint32 { return (call-1)%callSlots*tagsPerCall + step }
	abandoned := func(call uint32) bool {
		var ae *plumb.CollAbandonError
		err := tr.Judge(3, tag(call, 2), 0, plumb.Event{})
		if err != nil && (!errors.As(err, &ae) || ae.Rank != 3 || !errors.Is(err, plumb.ErrCollAbandoned)) {
			t.Fatalf("call %d: %v, want a *CollAbandonError from rank 3", call, err)
		}
		return err != nil
	}
	tr.begin(5)
	tr.Judge(3, 0, 0, plumb.Event{Kind: plumb.Told, Tag: tag(8, tagsPerCall-1), Word: 0})
	tr.Judge(3, 0, 0, plumb.Event{Kind: plumb.Told, Tag: tag(9, tagsPerCall-1), Word: 7})
	var ae *plumb.CollAbandonError
	if !errors.As(tr.Judge(3, tag(9, 0), 0, plumb.Event{}), &ae) || ae.Why != 7 {
		t.Fatalf("call 9's abandon: %+v, want the why it carried (7)", ae)
	}
	if !abandoned(8) || !abandoned(9) || abandoned(7) || abandoned(10) {
		t.Fatalf("abandoned 7, 8, 9, 10: %v %v %v %v, want false true true false", abandoned(7), abandoned(8), abandoned(9), abandoned(10))
	}
	tr.begin(8)
	if !abandoned(8) || !abandoned(9) {
		t.Fatal("a note was forgotten before this rank left its call")
	}
	tr.begin(9)
	if abandoned(8) || !abandoned(9) {
		t.Fatalf("in call 9: abandoned 8 %v, 9 %v, want false true", abandoned(8), abandoned(9))
	}
	tr.begin(10)
	tr.begin(8 + callSlots) // call 8's tags again
	if abandoned(8 + callSlots) {
		t.Fatal("a call that reuses an abandoned call's tags fails")
	}
	if n := tr.notes.Load(); n != 0 {
		t.Fatalf("%d notes counted with none left: begin would take its lock for ever", n)
	}
	tr.Judge(3, 0, 0, plumb.Event{Kind: plumb.Told, Tag: tag(9+callSlots, 0), Word: 0}) // noted with nothing else noted
	if !abandoned(9 + callSlots) {
		t.Fatal("an abandon noted when no other was is not seen")
	}
	tr.begin(10 + callSlots)
	if abandoned(9+callSlots) || tr.notes.Load() != 0 {
		t.Fatal("a note of a call left behind survives the next call's beginning")
	}
}

// TestPastCall: a tag is past for the callSlots/2 calls before the one in
// progress, and neither the current call's nor the next ones' tags are;
// without call numbering nothing is.
func TestPastCall(t *testing.T) {
	tag := func(slot uint32) uint32 { return slot*tagsPerCall + 5 }
	cases := []struct {
		call, slot uint32
		want       bool
	}{
		{0, 0, false},
		{1, 0, false},                           // call 1 is slot 0: in progress
		{2, 0, true},                            // the call before
		{2, 1, false},                           // in progress
		{2, 2, false},                           // ahead
		{1, callSlots - 1, true},                // wrapped: call 0's slot
		{callSlots/2 + 1, 0, false},             // half the space back counts as ahead
		{callSlots / 2, 0, true},                // just under half the space back
		{callSlots + 1, 0, false},               // call 1's slot again, in progress
		{callSlots + 2, callSlots/2 + 1, false}, // half the space ahead
	}
	for _, c := range cases {
		if got := pastCall(c.call, tag(c.slot)); got != c.want {
			t.Errorf("pastCall(call %d, slot %d) = %v, want %v", c.call, c.slot, got, c.want)
		}
	}
}
