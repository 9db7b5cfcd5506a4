package engine

import (
	"math"
	"testing"
	"time"

	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/handshake"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/lograte"
	"github.com/boltmesh/boltmesh/internal/match"
	"github.com/boltmesh/boltmesh/internal/spin"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Unexported pieces the external tests (package engine_test) check.
var (
	KeylessExposed = keylessExposed
	NoKeyWarning   = noKeyWarning
)

// The refusal log's rate: a burst, then one line per interval.
const (
	RefusalBurst = lograte.Burst
	RefusalEvery = lograte.Every
)

// The barrier's first reserved tag, for the fuzz target that plays a
// peer's part in it (payload_fuzz_test.go).
const TagBarrier = tagBarrier

// SendTag is Send on any tag, reserved ones included.
func SendTag(t *NetTransport, to int, tag uint32, p []byte) error { return t.send(nil, to, tag, p) }

// RecvTag is RecvTimeout on any tag, reserved ones included.
func RecvTag(t *NetTransport, from int, tag uint32, d time.Duration) ([]byte, error) {
	_, b, err := t.recv(from, tag, nil, false, waitOpts{op: "recv", timeout: d})
	return b, err
}

// PeerLost returns why t lost rank, or nil while it has not.
func PeerLost(t *NetTransport, rank int) error { return t.peer(rank).lostErr("probe") }

// QueuedBytes returns the credit (frame.Cost) of the messages from rank
// that t holds queued for receives not yet posted: eager payloads and
// RTSs.
func QueuedBytes(t *NetTransport, rank int) uint64 {
	p := t.peer(rank)
	p.mu.Lock()
	defer p.mu.Unlock()
	var n uint64
	for _, q := range p.m.All() {
		q.Msgs.Each(func(m match.Msg) { n += m.Cost() })
	}
	return n
}

// HeldCredit returns the credit of rank's frames that t has not
// released: what rank may not send again until t releases it.
func HeldCredit(t *NetTransport, rank int) uint64 { return t.peer(rank).in.Held() }

// DrainPeer drops every message from rank queued at t, as dropPastColl
// drops a collective call's: their credit is released and the senders of
// queued RTSs are told to send nothing.
func DrainPeer(t *NetTransport, rank int) {
	p := t.peer(rank)
	p.mu.Lock()
	var freed uint64
	var answer []uint64
	for tag, q := range p.m.All() {
		for {
			m, ok := q.Msgs.Pop()
			if !ok {
				break
			}
			freed += m.Cost()
			if m.Buf != nil {
				ioloop.PutBuffer(m.Buf)
			} else {
				answer = append(answer, m.ID)
			}
		}
		p.m.Tidy(tag, q)
	}
	p.mu.Unlock()
	for _, id := range answer {
		p.answerRTS(id, false, false) // releases the RTS's credit
		freed -= frame.Cost(0)
	}
	p.freeCredit(freed)
}

// PostedRecvs returns how many receives from rank t has posted and not
// completed: waiting for a message, or taking one's payload.
func PostedRecvs(t *NetTransport, rank int) int {
	p := t.peer(rank)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.rdv.in)
	if p.m.claimed != nil {
		n++
	}
	for _, q := range p.m.All() {
		n += q.Recvs.Len()
	}
	return n
}

// ClaimedRdvs returns how many rendezvous messages from rank receives of
// t have taken and wait for the DATA of.
func ClaimedRdvs(t *NetTransport, rank int) int {
	p := t.peer(rank)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.rdv.in)
}

// BarrierSignalled returns the last barrier signal rank t gave its
// neighbour r through their mailbox (0: none, or r is no neighbour).
func BarrierSignalled(t *NetTransport, r int) uint64 {
	mb := t.mailboxOf(r)
	if mb == nil {
		return 0
	}
	return mb.Given()
}

// BarrierSignal is the signal of round k of barrier number epoch.
func BarrierSignal(epoch uint64, k uint32) uint64 { return barrierSignal(epoch, k) }

// MailboxInline is the longest part a mailbox keeps beside its header.
const MailboxInline = linkshm.MailboxInline

// PipeRingOf is the data ring of rank t's pipe with rank r, or 0 if the
// pair has no pipes.
func PipeRingOf(t *NetTransport, r int) int {
	l, ok := t.peer(r).link.(*meshLink)
	if !ok || len(l.data) == 0 || l.data[0] == nil || l.data[0].DeferLimit() == math.MaxUint64 {
		return 0
	}
	return int(2 * l.data[0].DeferLimit())
}

// Crowded reports whether t waits as on a crowded machine, and its spin.
func Crowded(t *NetTransport) (bool, time.Duration) { return t.topo.crowded.Load(), t.spinBudget() }

// SameMachine reports whether rank r's HELLO named t's machine.
func SameMachine(t *NetTransport, r int) bool { return t.topo.sameMachine[r].Load() }

// SettleCrowdingOn decides again, as at formation, whether t is crowded,
// on a machine of cpus cores.
func SettleCrowdingOn(t *NetTransport, cpus int) { t.settleCrowdingOn(cpus) }

// SetFailHook has f called as t's operations with a peer are failed (the
// peer lost, or t closing), after they are; nil removes it.
func SetFailHook(f func(t *NetTransport, rank int)) {
	if f == nil {
		testHookFailed.Store(nil)
		return
	}
	testHookFailed.Store(&f)
}

// ReadInFlight reports whether a payload from rank is being read into the
// buffer of one of t's requests: a receive's or a get's (fill.go).
func ReadInFlight(t *NetTransport, rank int) bool {
	p := t.peer(rank)
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.m.claimed != nil || p.one.claimed != nil
	for _, r := range p.rdv.filling {
		in = in || r != nil
	}
	return in
}

// BytesRead returns the bytes t has read from rank's streams.
func BytesRead(t *NetTransport, rank int) uint64 {
	l := t.peer(rank).link
	return l.bytesRead(laneData) + l.bytesRead(laneCtl)
}

// SetStreamHook has f wrap the Stream of every TCP connection a
// transport adopts from now on (rank: the peer's; stream: its index, the
// control stream's Options.Streams); nil removes it.
func SetStreamHook(f func(t *NetTransport, rank, stream int, s ioloop.Stream) ioloop.Stream) {
	if f == nil {
		testHookStream.Store(nil)
		return
	}
	testHookStream.Store(&f)
}

// View returns t's membership view: its epoch, its members, the ranks
// that left in the order t learned it, and the channel closed once the
// next view replaces it.
func View(t *NetTransport) (epoch uint64, members, left []int, next <-chan struct{}) {
	v := t.view()
	for r := range v.Peers {
		if v.Member(r) {
			members = append(members, r)
		}
	}
	for _, d := range v.Left {
		left = append(left, d.Rank)
	}
	return v.Epoch, members, left, v.Next
}

// SingleCopies returns how many messages t copied from rank's memory
// (single_copy.go).
func SingleCopies(t *NetTransport, rank int) uint64 { return t.peer(rank).copy.count.Load() }

// BreakSingleCopy makes t's next copies from rank fail, as if its process
// were gone: they read from a pid no process has.
func BreakSingleCopy(t *NetTransport, rank int) {
	c := *t.peer(rank).can()
	c.copy.Pid = 1<<22 + 7
	t.peer(rank).setCaps(&c)
}

// QueuedCopies returns how many queued RTSs with Copy from rank t holds
// the address of.
func QueuedCopies(t *NetTransport, rank int) int {
	p := t.peer(rank)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.rdv.copyAt)
}

// SetSealOptions has the sealed links made from now on take o (key
// updates, crew); the zero value restores the defaults.
func SetSealOptions(o sealed.Options) {
	if o == (sealed.Options{}) {
		testSealOptions.Store(nil)
		return
	}
	testSealOptions.Store(&o)
}

// SealCrew is sealCrew: the crew of a rank sharing cpus cores with local
// ranks.
func SealCrew(cpus, local int) int { return sealCrew(cpus, local) }

// Sealing is sealing: whether a connection whose HELLOs carry the seal
// flags mine and theirs, and the host and machine identities, is sealed.
func Sealing(mine, theirs frame.Hello) (bool, string) { return handshake.Sealing(mine, theirs) }

// UnsealedWarned reports whether a connection with these HELLOs makes a
// transport log that its links leave the host unsealed.
func UnsealedWarned(mine, theirs frame.Hello) bool {
	_, warn := handshake.SealedLink(mine, theirs)
	return warn
}

// CoordinatorPost has t, a star's coordinator, write h and p as they are
// on its stream to worker to: a coordinator that breaks the protocol.
func CoordinatorPost(t *NetTransport, to int, h frame.Header, p []byte) error {
	return t.peer(to).link.(*streamLink).conn.Post(&h, p, true)
}

// WithRelayPart returns o with which a star's coordinator relays payloads
// longer than n bytes in parts of n.
func WithRelayPart(o Options, n int) Options {
	o.relayPart = n
	return o
}

// RelayPart is the longest part of a routed payload a star's coordinator
// holds (relayPart).
const RelayPart = relayPart

// SetGiveCoreHook has f called each time a spin gives its core up past
// Options.SpinYield, until the test ends.
func SetGiveCoreHook(tb testing.TB, f func()) {
	tb.Cleanup(spin.SetGiveCoreHook(f))
}
