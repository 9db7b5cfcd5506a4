package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// peerRun interprets one fuzz script (see FuzzPeer) against a world: a
// sequence of steps, each an opcode byte and its arguments.

// fuzzMsg is a message the raw rank sent a real rank, in the order of
// that rank's matching (per tag).
type fuzzMsg struct {
	data  []byte
	rdv   *rawRdv // a rendezvous message's, whose data its DATA fills
	maybe bool    // sent beyond the model's credit: may have been refused
}

// rawRdv is a rendezvous message of the raw rank.
type rawRdv struct {
	id        uint64
	tag       uint32
	n         int
	k         int    // pieces, as the first DATA piece said (0: none sent)
	sent      uint32 // the pieces sent, a bit each
	cts       bool   // the real rank answered CTS
	refused   bool   // the real rank answered CTS|Error
	withdrawn bool
	bad       bool // a piece was wrong: the content is not known
	msg       *fuzzMsg
}

func (r *rawRdv) complete() bool { return r.k > 0 && r.sent == 1<<r.k-1 }

// fuzzRecv is a receive a real rank posted from the raw rank.
type fuzzRecv struct {
	tag  int
	into bool
	cap  int
	done chan struct{}
	n    int
	data []byte
	err  error
}

// fuzzOp is any other operation of a real rank: a send or a get.
type fuzzOp struct {
	what string
	done chan struct{}
	err  error
	// a get's
	dst    []byte
	id     uint64
	answer []byte // what the raw rank answered it with (nil: nothing yet)
	ansErr bool
}

// fuzzTarget is a real rank the script talks to, and what the raw rank
// knows of it.
type fuzzTarget struct {
	rank  int
	tr    *engine.NetTransport
	used  *uint64 // credit the raw rank used at it (since the world began)
	tombs *int    // its tombstones that hold credit (fuzzWorld.tombs)
	rdvs  []*rawRdv
	tags  map[uint32][]*fuzzMsg
	recvs []*fuzzRecv
	ops   []*fuzzOp
	gets  map[uint64]*fuzzOp // its gets waiting for the raw rank's answer, by id
}

// starTargets are the ranks a FuzzStar script talks to: the coordinator
// and, through it, worker 1.
func starTargets() []int { return []int{0, 1} }

// left is the credit the raw rank knows it has at t.
func (r *peerRun) left(t *fuzzTarget) uint64 {
	g := r.w.raw.credit(t.rank)
	if g < *t.used {
		return 0
	}
	return g - *t.used
}

type peerRun struct {
	w       *fuzzWorld
	in      []byte
	targets []*fuzzTarget
	streams int // streams per pair

	invalid  map[int]string // by target: the first thing the script did that the protocol does not allow
	goodbye  map[int]bool   // GOODBYE sent to a target
	stopped  bool           // a frame was sent that the rank must refuse: nothing may follow
	ctx      context.Context
	cancel   context.CancelFunc
	rankOps  sync.WaitGroup
	log      []string
	fenceSeq uint64
	fenceErr error // a fence that found something wrong, reported by the next check
}

func newPeerRun(w *fuzzWorld, script []byte) *peerRun {
	w.raw.forget()
	r := &peerRun{w: w, in: script, streams: meshStreams(), invalid: make(map[int]string), goodbye: make(map[int]bool)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	targets := []int{0}
	if w.star {
		targets, r.streams = starTargets(), 1
	}
	for _, rank := range targets {
		r.targets = append(r.targets, &fuzzTarget{rank: rank, tr: w.ts[rank], used: &w.used[rank], tombs: &w.tombs[rank], tags: make(map[uint32][]*fuzzMsg), gets: make(map[uint64]*fuzzOp)})
	}
	return r
}

func (r *peerRun) u8() byte {
	if len(r.in) == 0 {
		return 0
	}
	b := r.in[0]
	r.in = r.in[1:]
	return b
}

func (r *peerRun) u16() uint16 { return uint16(r.u8()) | uint16(r.u8())<<8 }

func (r *peerRun) u64() uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(r.u8()) << (8 * i)
	}
	return v
}

// target picks the real rank a step talks to.
func (r *peerRun) target(b byte) *fuzzTarget { return r.targets[int(b)%len(r.targets)] }

// breaks notes that the step breaks the protocol at t.
func (r *peerRun) breaks(t *fuzzTarget, what string) {
	r.logf("(breaks the protocol: %s)", what)
	if _, ok := r.invalid[t.rank]; !ok {
		r.invalid[t.rank] = what
	}
}

func (r *peerRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

// sizes are the bases of the payload sizes a size byte picks: the
// boundaries of the real ranks' limits (eager limit, striping threshold,
// a quarter of the window, the window, MaxFrame).
var sizes = []int{0, 1, 255, 4 << 10, 8 << 10, 16<<10 - frame.MsgOverhead, 64 << 10, 256 << 10}

// size decodes a payload size: a base and an offset of -16..15.
func size(b byte) int {
	n := sizes[b%8] + int(b>>3) - 16
	if b%8 < 2 {
		n = sizes[b%8] + int(b>>3)
	}
	return max(n, 0)
}

// content returns n bytes that depend on seed.
func content(seed uint64, n int) []byte {
	p := make([]byte, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
	return p
}

// nextID returns a fresh id of the raw rank.
func (r *peerRun) nextID() uint64 {
	r.w.ids++
	return r.w.ids
}

// send sends a frame to t on stream s, and notes a failed write (the rank
// dropped the raw rank; the next check sees it).
func (r *peerRun) send(t *fuzzTarget, s int, h frame.Header, p []byte) {
	if len(p) > maxFrame {
		// Refused unread, by the first rank that reads it (in a star, the
		// coordinator): nothing may follow.
		r.breaks(r.targets[0], fmt.Sprintf("a %v frame of %d bytes, above MaxFrame", h.Kind, len(p)))
		r.stopped = true
	}
	if err := r.w.raw.send(t.rank, s, h, p); err != nil {
		r.logf("write to rank %d: %v", t.rank, err)
		r.stopped = true
	}
}

// play runs the script, ends the iteration and checks it. It reports
// whether the world may be kept for the next iteration.
func (r *peerRun) play(t *testing.T) bool {
	for len(r.in) > 0 && !r.stopped && r.w.raw.deadErr() == nil && r.fenceErr == nil {
		r.collect()
		r.step(t)
	}
	if r.fenceErr != nil {
		t.Fatalf("%v\n%s", r.fenceErr, r.trace())
	}
	return r.finish(t)
}

func (r *peerRun) step(t *testing.T) {
	switch r.u8() % opCount {
	case opSend:
		r.opSend()
	case opRTS:
		r.opRTS()
	case opData:
		r.opData()
	case opWithdraw:
		r.opWithdraw()
	case opCTS:
		r.opCTS()
	case opCredit:
		r.opCredit()
	case opPut:
		r.opPut()
	case opGetReq:
		r.opGetReq()
	case opGetReply:
		r.opGetReply()
	case opRPC:
		r.opRPC()
	case opControl:
		r.opControl()
	case opRaw:
		r.opRaw()
	case opRankRecv:
		r.opRankRecv()
	case opRankSend:
		r.opRankSend()
	case opRankGet:
		r.opRankGet()
	case opFence:
		r.fenceAll(t)
	}
}

// collect takes in what the raw rank received: the answers to its
// rendezvous messages, the real ranks' gets.
func (r *peerRun) collect() {
	frames := r.w.raw.takeFrames(func(f rawFrame) bool {
		return f.h.Kind == frame.KindCTS || f.h.Kind == frame.KindGetReq
	})
	for _, f := range frames {
		t := r.targetOf(f)
		if t == nil {
			continue
		}
		switch f.h.Kind {
		case frame.KindCTS:
			for _, rdv := range t.rdvs {
				if rdv.id == f.h.Offset && !rdv.cts && !rdv.refused {
					rdv.cts, rdv.refused = f.h.Flags&frame.FlagError == 0, f.h.Flags&frame.FlagError != 0
					break
				}
			}
		case frame.KindGetReq:
			req, err := frame.DecodeGetReq(f.p)
			if err != nil {
				continue
			}
			for _, o := range t.ops {
				if o.id == ^uint64(0) && uint64(len(o.dst)) == req.Length {
					o.id = req.ID
					t.gets[req.ID] = o
					break
				}
			}
		}
	}
}

// targetOf returns the target a frame the raw rank received comes from.
func (r *peerRun) targetOf(f rawFrame) *fuzzTarget {
	from := int(f.h.Src)
	for _, t := range r.targets {
		if t.rank == from {
			return t
		}
	}
	return nil
}

// fenceAll fences every target.
func (r *peerRun) fenceAll(t *testing.T) bool {
	for _, tg := range r.targets {
		if !r.fence(t, tg) {
			return false
		}
	}
	return true
}

// fence waits until tg has processed every frame sent to it so far: the
// reply to a GET_REQ sent after them has come. It reports false if the
// raw rank lost its connection first, and fails t if no reply comes.
func (r *peerRun) fence(t *testing.T, tg *fuzzTarget) bool {
	if r.stopped || r.w.raw.deadErr() != nil {
		return false
	}
	r.fenceSeq++
	id := 1<<63 | r.fenceSeq<<8 | uint64(tg.rank)
	var p [frame.GetReqSize]byte
	(&frame.GetReq{ID: id}).Encode(&p)
	r.send(tg, 0, frame.Header{Kind: frame.KindGetReq}, p[:])
	rp := r.w.raw
	ok := rp.waitFor(fuzzWait, func() bool {
		for _, f := range rp.got {
			if f.h.Kind == frame.KindGetReply && f.h.Offset == id {
				return true
			}
		}
		_, lerr := r.lostNow()
		return lerr != nil
	})
	if _, lerr := r.lostNow(); lerr != nil {
		ok = false
	}
	rp.takeFrames(func(f rawFrame) bool { return f.h.Kind == frame.KindGetReply && f.h.Offset == id })
	if _, lerr := r.lostNow(); !ok && rp.deadErr() == nil && lerr == nil {
		r.fenceErr = fmt.Errorf("rank %d did not answer a fence within %v", tg.rank, fuzzWait)
	}
	if ok {
		r.checkHeld(tg)
	}
	if t != nil && r.fenceErr != nil {
		t.Fatalf("%v\n%s", r.fenceErr, r.trace())
	}
	return ok
}

// checkHeld checks what tg holds for the raw rank at a quiet moment.
func (r *peerRun) checkHeld(tg *fuzzTarget) {
	const window = 64 << 10
	q, held := engine.QueuedBytes(tg.tr, rawRank), engine.HeldCredit(tg.tr, rawRank)
	if (q > window || held > window) && r.fenceErr == nil {
		r.fenceErr = fmt.Errorf("rank %d holds %d bytes of queued messages and %d of credit for the raw rank, window %d", tg.rank, q, held, window)
	}
}

// lostNow returns the first loss, if any, and the rank that lost a peer:
// of the raw rank by a target (the coordinator first: a worker learns of
// it from the coordinator), else of the coordinator by worker 1 (which
// its own loss of the raw rank would mean, in a star), else of one real
// rank by the other.
func (r *peerRun) lostNow() (int, error) {
	// Losses only accumulate, and one rank's loss that follows from
	// another's is recorded after it: scan until two scans agree, so that
	// a loss recorded between the checks of one scan is not missed.
	who, err := r.scanLost()
	for {
		w2, e2 := r.scanLost()
		if w2 == who && lostRank(e2) == lostRank(err) {
			return who, err
		}
		who, err = w2, e2
	}
}

// lostRank is the rank a loss names, or -1 for none.
func lostRank(err error) int {
	var pe *engine.PeerError
	if !errors.As(err, &pe) {
		return -1
	}
	return pe.Rank
}

// scanLost is one scan of lostNow's.
func (r *peerRun) scanLost() (int, error) {
	for _, tg := range r.targets {
		if err := engine.PeerLost(tg.tr, rawRank); err != nil {
			return tg.rank, err
		}
	}
	for _, a := range []int{1, 0} {
		if err := engine.PeerLost(r.w.ts[a], 1-a); err != nil {
			return a, err
		}
	}
	return 0, nil
}

func (r *peerRun) trace() string {
	return "script steps:\n  " + strings.Join(r.log, "\n  ")
}
