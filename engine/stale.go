package engine

import "github.com/boltmesh/boltmesh/ioloop"

// Messages of ended collective calls. A call that failed (a lost peer, a
// mismatch, its ctx) or a deadline allreduce that left a late rank out
// ends while its other ranks' messages may still be on their way. Nothing
// will ever receive them, and the call's tags come round again after
// collSlots calls, where they would be taken for another call's. So, while
// the collective layer numbers its calls (beginCollCall), a collective
// message for a call that this rank has already left behind is dropped as
// it arrives, and those queued before are dropped when the next call
// begins.

// collSlots is the number of calls the collective tag space holds: call
// number k (beginCollCall) owns the collCallTags tags from
// ((k-1) mod collSlots) * collCallTags.
const collSlots = CollTags / collCallTags

// pastCall reports whether collective wire tag belongs to one of the
// collSlots/2 calls before call, which are over; the later ones may be
// calls that faster peers have begun. With call 0 (no numbering) it
// reports false.
func pastCall(call, tag uint32) bool {
	if call == 0 {
		return false
	}
	cur := (call - 1) % collSlots
	d := (cur + collSlots - (tag-collTagBase)/collCallTags) % collSlots
	return d != 0 && d < collSlots/2
}

// dropPastColl drops the queued messages from p of collective calls before
// call, releasing their credit (the senders of queued RTSs are told to
// send nothing), and the notes of those calls that p gave up.
func (t *NetTransport) dropPastColl(p *peer, call uint32) {
	p.mu.Lock()
	p.forgetAbandoned(call)
	if len(p.m.tags) == 0 {
		p.mu.Unlock()
		return
	}
	var freed uint64
	var answer []uint64
	for tag, q := range p.m.tags {
		if !isCollTag(tag) || !pastCall(call, tag) {
			continue
		}
		for {
			m, ok := q.msgs.pop()
			if !ok {
				break
			}
			if m.bb != nil {
				freed += m.cost()
				ioloop.PutBuffer(m.bb)
			} else {
				answer = append(answer, m.id)
			}
		}
		p.m.tidy(tag, q)
	}
	p.mu.Unlock()
	if freed > 0 {
		p.freeCredit(freed)
	}
	for _, id := range answer {
		p.answerRTS(id, false)
	}
}
