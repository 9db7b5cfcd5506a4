package collective

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// The collective layer numbers its calls 1, 2, ... (Comm.begin; 2^32-1 is
// followed by 1, since 0 means no call), and call k owns the tagsPerCall
// tags from ((k-1) mod callSlots) * tagsPerCall on, in the tag range the
// transport lends (plumb.Wire). A calls is the range's owner
// (plumb.Owner), one per transport, shared by every Comm over it, and
// through it:
//
//   - a message of a call this rank has left behind is dropped as it
//     arrives, and those queued are dropped when the next call begins
//     (Wanted): a call that failed, or a deadline allreduce that left a
//     late rank out, ends while other ranks' messages for it may still be
//     on their way, and its tags come round again after callSlots calls;
//   - a message for one step of a call while this rank waits for another
//     step of the same call from the same rank fails the wait with a
//     *plumb.CollMismatchError (Judge, Queued): the ranks chose different
//     algorithms or called different collectives, and the wait would last
//     forever;
//   - a rank that gives up a call that the others may still be in (its
//     calls differ from theirs, its arguments were refused, its ctx ended:
//     anything but a lost peer, which every rank sees itself) tells every
//     peer (abandon, an ABANDON frame on the call's abandonStep tag, with
//     why); a peer fails its receives from that rank for the call, those
//     waiting and those posted later, with a *plumb.CollAbandonError
//     (Judge: Told, then Posting). A peer notes every call that a rank gave up until it has
//     left that call behind itself: a rank whose ctx has ended may give
//     up several calls in a row before a slower peer reaches the first;
//   - this rank's GOODBYE tells the last call it completed (Progress),
//     and a receive of the call in progress gives up when a peer closed
//     in order without completing it (Judge, Closed), since that peer will never
//     send its part.

// Every Comm over one transport shares its calls: they take their numbers
// from it (next), in turn, so that a second Comm over a transport (one
// with other Options, or train's beside the caller's) numbers its calls
// after the first's, and the ranks agree on every number as long as they
// make the same calls in the same order, whichever Comm makes them.

// callSlots is the number of calls the collective tag space holds.
const callSlots = collTags / tagsPerCall

// calls is the owner of a transport's collective tags (plumb.Owner).
//
// Lock rule: cur, done and notes are atomics; mu guards abandoned; turn is
// held from a call's number (next) to its end (release), and guards seq.
// A Comm takes turn with its own mu held, never the reverse. The
// plumb.Owner methods run with an engine peer's lock held: they take
// mu only, and call nothing.
type calls struct {
	wire  plumb.Wire
	turn  sync.Mutex    // the call in progress's, by any Comm over the transport
	seq   uint32        // the last call number handed out
	cur   atomic.Uint32 // the call in progress (0: none began)
	quit  atomic.Uint32 // the call in progress if this rank gave it up (abandon), else 0
	done  atomic.Uint32 // the last call completed
	notes atomic.Int32  // the notes in abandoned, so that Posting takes no lock without one

	mu        sync.Mutex
	abandoned [][]abandonNote // by rank: the calls it gave up
}

var _ plumb.Owner = (*calls)(nil)

// abandonNote is a call that a peer gave up, by slot in the tag space,
// and why it said it did.
type abandonNote struct {
	slot uint32
	why  uint64
}

// callsOf returns the owner of wire's tags, installing one for a world
// of n ranks if it has none; nil if another kind is installed.
func callsOf(wire plumb.Wire, n int) *calls {
	_, c := lend(wire, n)
	return c
}

// lend returns the owner of wire's tags, installing a calls for a world
// of n ranks if it has none, and that calls if the owner is one.
func lend(wire plumb.Wire, n int) (plumb.Owner, *calls) {
	o := wire.Lend(opName, func() plumb.Owner {
		return &calls{wire: wire, abandoned: make([][]abandonNote, n)}
	})
	c, _ := o.(*calls)
	return o, c
}

// next waits for the call in progress, by any Comm over the transport, to
// end, and returns the next call number; release ends the turn.
func (cs *calls) next() uint32 {
	cs.turn.Lock()
	cs.seq++
	if cs.seq == 0 { // 0 is no call: 2^32-1 is followed by 1
		cs.seq = 1
	}
	return cs.seq
}

// release ends the turn next began.
func (cs *calls) release() { cs.turn.Unlock() }

// begin records that this rank began call number call; calls must not
// overlap. The messages of the calls before it are dropped from then on,
// those queued now and those that arrive, and so are the notes of those
// calls that peers gave up.
//
// With no notes it takes no lock: a note that Abandoned adds meanwhile
// may be of a call before this one (it forgot by the call in progress as
// it saw it), which no receive of this call asks about, and the next
// call's beginning forgets it.
func (cs *calls) begin(call uint32) {
	prev := cs.cur.Swap(call)
	if cs.notes.Load() != 0 {
		cs.mu.Lock()
		for r := range cs.abandoned {
			cs.forget(r, call)
		}
		cs.mu.Unlock()
	}
	// Only the call before this one has just become unwanted: the earlier
	// ones' messages were dropped as it began and as they arrived since,
	// but for one queued as that call began, which its drop (a look
	// without the lock first) may not have seen: so the one before it too.
	if prev != 0 && call == prev%math.MaxUint32+1 {
		if prev > 1 {
			cs.wire.Forget((prev-2)%callSlots*tagsPerCall, tagsPerCall)
		}
		cs.wire.Forget((prev-1)%callSlots*tagsPerCall, tagsPerCall)
	} else {
		cs.wire.Forget(0, collTags)
	}
}

// end records that this rank completed call number call: a GOODBYE it
// sends later tells its peers so, and they go on waiting for the others'
// parts of that call.
func (cs *calls) end(call uint32) { cs.done.Store(call) }

// abandon tells every peer, without waiting, that this rank gave up the
// call that owns tag (see above), with why.
// Its messages are no longer wanted from then on: those queued are
// dropped (a rendezvous sender told to send nothing), so that a peer
// whose receive completed does not wait for ever on its own send to this
// rank, which left the call before posting the receive for it.
func (cs *calls) abandon(tag uint32, why uint64) {
	cs.wire.Tell(tag, why)
	cur := cs.cur.Load()
	if cur == 0 || tag/tagsPerCall != (cur-1)%callSlots {
		return
	}
	cs.quit.Store(cur)
	cs.wire.Forget(tag/tagsPerCall*tagsPerCall, tagsPerCall)
}

// pastCall reports whether collective tag belongs to one of the
// callSlots/2 calls before call, which are over; the later ones may be
// calls that faster peers have begun. With call 0 (none began) it reports
// false.
func pastCall(call, tag uint32) bool {
	if call == 0 {
		return false
	}
	cur := (call - 1) % callSlots
	d := (cur + callSlots - tag/tagsPerCall) % callSlots
	return d != 0 && d < callSlots/2
}

// sameCall reports whether collective tags t and u belong to the same
// call.
func sameCall(t, u uint32) bool { return t/tagsPerCall == u/tagsPerCall }

// Wanted implements plumb.Owner: a message of a call this rank has
// left behind, or gave up, is not.
func (cs *calls) Wanted(_ int, tag uint32) bool {
	cur := cs.cur.Load()
	if q := cs.quit.Load(); q != 0 && q == cur && tag/tagsPerCall == (cur-1)%callSlots {
		return false // a call this rank gave up
	}
	return !pastCall(cur, tag)
}

// Judge implements plumb.Owner: a receive from a rank that gave up the
// call fails (posting), as does one of a call a message for another step
// of which is queued (conflict) or one of a call a peer that closed never
// completed (closed); a rank's Told notes its abandon (abandoned).
func (cs *calls) Judge(from int, tag, meta uint32, e plumb.Event) error {
	switch e.Kind {
	case plumb.Posting:
		return cs.posting(from, tag)
	case plumb.Queued:
		return cs.conflict(from, tag, meta, e.Tag, e.Meta)
	case plumb.Told:
		cs.noteAbandon(from, e.Tag, e.Word)
	case plumb.Closed:
		if cs.closed(uint32(e.Word)) {
			return ErrAbandoned // any error: the engine names the rank
		}
	}
	return nil
}

// posting is Judge's Posting: a receive from a rank that gave up the call
// fails with a *plumb.CollAbandonError.
func (cs *calls) posting(from int, tag uint32) error {
	if cs.notes.Load() == 0 {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if from < 0 || from >= len(cs.abandoned) {
		return nil
	}
	notes := cs.abandoned[from]
	i := slices.IndexFunc(notes, func(a abandonNote) bool { return a.slot == tag/tagsPerCall })
	if i < 0 {
		return nil
	}
	return &plumb.CollAbandonError{Rank: from, Tag: tag, Why: notes[i].why}
}

// conflict is Judge's Queued: a message for another step of the call a
// receive waits in means that the ranks are at different steps of one
// call.
func (cs *calls) conflict(from int, tag, postedMeta, arrived, arrivedMeta uint32) error {
	if !sameCall(tag, arrived) {
		return nil
	}
	return &plumb.CollMismatchError{Rank: from, Tag: arrived, Want: postedMeta, Got: arrivedMeta, OtherStep: true, WantTag: tag}
}

// noteAbandon is Judge's Told: the call that owns tag is noted as given up
// by rank from, until this rank leaves it behind.
func (cs *calls) noteAbandon(from int, tag uint32, why uint64) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if from < 0 || from >= len(cs.abandoned) {
		return
	}
	cs.forget(from, cs.cur.Load())
	slot := tag / tagsPerCall
	if !slices.ContainsFunc(cs.abandoned[from], func(a abandonNote) bool { return a.slot == slot }) {
		cs.abandoned[from] = append(cs.abandoned[from], abandonNote{slot: slot, why: why})
		cs.notes.Add(1)
	}
}

// forget drops the notes of the calls rank r gave up that are behind call
// number call (see pastCall): their tags may come round again for calls r
// has not given up. cs.mu is held.
func (cs *calls) forget(r int, call uint32) {
	before := len(cs.abandoned[r])
	cs.abandoned[r] = slices.DeleteFunc(cs.abandoned[r], func(a abandonNote) bool {
		return pastCall(call, a.slot*tagsPerCall)
	})
	if d := len(cs.abandoned[r]) - before; d != 0 {
		cs.notes.Add(int32(d))
	}
}

// Progress implements plumb.Owner: the last call completed.
func (cs *calls) Progress() uint32 { return cs.done.Load() }

// closed is Judge's Closed: a peer that closed having completed call
// done left the call in progress unanswerable if it had not completed it.
// Call numbers wrap; they compare as serial numbers.
func (cs *calls) closed(done uint32) bool {
	cur := cs.cur.Load()
	return cur != 0 && int32(done-cur) < 0
}
