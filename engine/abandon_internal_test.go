package engine

import (
	"errors"
	"testing"
)

// TestAbandonedNoteExpires: a peer's abandon fails receives for the call
// it named only, and is forgotten once half the tag space's calls have
// begun since, so that the call's tags, reused later, work again.
func TestAbandonedNoteExpires(t *testing.T) {
	tr := &NetTransport{}
	p := &peer{t: tr, rank: 3}
	tag := func(call, step uint32) uint32 { return collTagBase + call*collCallTags + step }
	tr.collCall.Store(100)
	p.abandon(tag(7, collCallTags-1))
	var ae *CollAbandonError
	if err := p.abandonedErr(tag(7, 2)); !errors.As(err, &ae) || ae.Rank != 3 || !errors.Is(err, ErrCollAbandoned) {
		t.Fatalf("receive for the abandoned call: %v, want a *CollAbandonError from rank 3", err)
	}
	if err := p.abandonedErr(tag(8, 2)); err != nil {
		t.Fatalf("receive for another call: %v, want nil", err)
	}
	tr.collCall.Store(100 + CollTags/collCallTags/2 - 1)
	if err := p.abandonedErr(tag(7, 0)); err == nil {
		t.Fatal("the note was forgotten too early")
	}
	tr.collCall.Store(100 + CollTags/collCallTags) // the tag space wrapped: call 7's tags are reused
	if err := p.abandonedErr(tag(7, 0)); err != nil {
		t.Fatalf("after the tags wrapped: %v, want nil", err)
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
