package engine

import (
	"errors"
	"testing"
)

// TestAbandonedNotes: a peer's abandons fail receives for the calls they
// named only, every one of them (a peer may give up several calls before
// this rank reaches the first), until this rank begins a later call, so
// that the calls' tags, reused later, work again.
func TestAbandonedNotes(t *testing.T) {
	tr := &NetTransport{}
	p := &peer{t: tr, rank: 3}
	tr.peers = []*peer{p}
	// Call k owns slot k-1 of the tag space.
	tag := func(call, step uint32) uint32 { return collTagBase + (call-1)%collSlots*collCallTags + step }
	abandoned := func(call uint32) bool {
		var ae *CollAbandonError
		err := p.abandonedErr(tag(call, 2))
		if err != nil && (!errors.As(err, &ae) || ae.Rank != 3 || !errors.Is(err, ErrCollAbandoned)) {
			t.Fatalf("call %d: %v, want a *CollAbandonError from rank 3", call, err)
		}
		return err != nil
	}
	tr.beginCollCall(5)
	p.abandon(tag(8, collCallTags-1), 0)
	p.abandon(tag(9, collCallTags-1), 7)
	var ae *CollAbandonError
	if !errors.As(p.abandonedErr(tag(9, 0)), &ae) || ae.Why != 7 {
		t.Fatalf("call 9's abandon: %+v, want the why it carried (7)", ae)
	}
	if !abandoned(8) || !abandoned(9) || abandoned(7) || abandoned(10) {
		t.Fatalf("abandoned 7, 8, 9, 10: %v %v %v %v, want false true true false", abandoned(7), abandoned(8), abandoned(9), abandoned(10))
	}
	tr.beginCollCall(8)
	if !abandoned(8) || !abandoned(9) {
		t.Fatal("a note was forgotten before this rank left its call")
	}
	tr.beginCollCall(9)
	if abandoned(8) || !abandoned(9) {
		t.Fatalf("in call 9: abandoned 8 %v, 9 %v, want false true", abandoned(8), abandoned(9))
	}
	tr.beginCollCall(10)
	tr.beginCollCall(8 + collSlots) // call 8's tags again
	if abandoned(8 + collSlots) {
		t.Fatal("a call that reuses an abandoned call's tags fails")
	}
}

// TestPastCall: a tag is past for the collSlots/2 calls before the one in
// progress, and neither the current call's nor the next ones' tags are;
// without call numbering nothing is.
func TestPastCall(t *testing.T) {
	tag := func(slot uint32) uint32 { return collTagBase + slot*collCallTags + 5 }
	cases := []struct {
		call, slot uint32
		want       bool
	}{
		{0, 0, false},
		{1, 0, false},                           // call 1 is slot 0: in progress
		{2, 0, true},                            // the call before
		{2, 1, false},                           // in progress
		{2, 2, false},                           // ahead
		{1, collSlots - 1, true},                // wrapped: call 0's slot
		{collSlots/2 + 1, 0, false},             // half the space back counts as ahead
		{collSlots / 2, 0, true},                // just under half the space back
		{collSlots + 1, 0, false},               // call 1's slot again, in progress
		{collSlots + 2, collSlots/2 + 1, false}, // half the space ahead
	}
	for _, c := range cases {
		if got := pastCall(c.call, tag(c.slot)); got != c.want {
			t.Errorf("pastCall(call %d, slot %d) = %v, want %v", c.call, c.slot, got, c.want)
		}
	}
}
