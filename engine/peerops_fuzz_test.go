package engine_test

import (
	"fmt"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// The steps of a peerRun script: each reads its argument bytes and sends
// the raw rank's frames, or makes a real rank act, keeping the model of
// what the real rank holds and owes up to date.

// Opcodes (the step's first byte modulo opCount).
const (
	opSend     = iota // an eager SEND within the credit (or, flagged, beyond it)
	opRTS             // an RTS (flagged: reusing a send id, or beyond the credit)
	opData            // a DATA piece of a rendezvous message, right or wrong
	opWithdraw        // an RTS|Error withdrawing a rendezvous message (or an unknown one)
	opCTS             // a CTS (or CTS|Error) for a real rank's RTS, or for nothing
	opCredit          // more credit for the real rank, or a total it has already
	opPut             // a PUT inside or outside the heap
	opGetReq          // a GET_REQ inside or outside the heap
	opGetReply        // a GET_REPLY to a real rank's get, right or wrong, or to nothing
	opRPC             // an RPC_REQ or RPC_REPLY of any fields
	opControl         // HEARTBEAT, GOODBYE, PUT_ACK|Error or a handshake frame after the handshake
	opRaw             // a header of any fields
	opRankRecv        // the real rank posts a receive from the raw rank
	opRankSend        // the real rank sends to the raw rank
	opRankGet         // the real rank gets from the raw rank's heap
	opFence           // wait until the real rank processed everything sent so far
	opCount
)

// credited sends a credited frame of cost to t if the raw rank has the
// credit, or, when over is set, beyond it; it reports whether the frame
// was sent, and whether beyond the credit.
func (r *peerRun) credited(t *fuzzTarget, cost uint64, over bool) (sent, beyond bool) {
	if cost > r.left(t) {
		if !over {
			return false, false
		}
		r.breaks(t, fmt.Sprintf("a frame of %d bytes of credit with %d left", cost, r.left(t)))
		beyond = true
	}
	*t.used += cost
	return true, beyond
}

// tag picks one of a few message tags.
func tag(b byte) uint32 { return uint32(b%4) + 1 }

func (r *peerRun) opSend() {
	t, tg, sz, flags := r.target(r.u8()), tag(r.u8()), size(r.u8()), r.u8()
	p := content(r.nextID(), sz)
	sent, beyond := r.credited(t, frame.Cost(uint64(len(p))), flags&1 != 0)
	if !sent {
		return
	}
	r.logf("SEND to %d tag %d, %d bytes", t.rank, tg, len(p))
	t.tags[tg] = append(t.tags[tg], &fuzzMsg{data: p, maybe: beyond})
	r.send(t, 0, frame.Header{Kind: frame.KindSend, Tag: tg}, p)
}

func (r *peerRun) opRTS() {
	t, tg, sz, flags := r.target(r.u8()), tag(r.u8()), size(r.u8())<<(r.u8()%4), r.u8()
	id := r.nextID()
	if flags&2 != 0 && len(t.rdvs) > 0 {
		id = t.rdvs[int(flags>>2)%len(t.rdvs)].id
		r.breaks(t, fmt.Sprintf("an RTS reusing send id %d", id))
	}
	sent, beyond := r.credited(t, frame.Cost(0), flags&1 != 0)
	if !sent {
		return
	}
	if sz > maxFrame {
		r.breaks(t, fmt.Sprintf("an RTS of %d bytes, above MaxFrame", sz))
	}
	rdv := &rawRdv{id: id, tag: tg, n: sz}
	rdv.msg = &fuzzMsg{data: make([]byte, sz), rdv: rdv, maybe: beyond}
	t.rdvs = append(t.rdvs, rdv)
	t.tags[tg] = append(t.tags[tg], rdv.msg)
	var p [frame.RTSSize]byte
	frame.EncodeRTS(&p, uint64(sz))
	r.logf("RTS to %d tag %d id %d, %d bytes", t.rank, tg, id, sz)
	*t.tombs = 0 // its id is above theirs: they are dropped
	r.send(t, 0, frame.Header{Kind: frame.KindRTS, Tag: tg, Offset: id}, p[:])
}

// piece is the byte range of piece i of an n-byte message cut into k.
func piece(n, k, i int) (lo, hi int) {
	return int(uint64(n) * uint64(i) / uint64(k)), int(uint64(n) * uint64(i+1) / uint64(k))
}

func (r *peerRun) opData() {
	t, which, kb, ib, lb := r.target(r.u8()), r.u8(), r.u8(), r.u8(), r.u8()
	s := int(lb>>4) % r.streams
	var rdv *rawRdv
	if len(t.rdvs) > 0 {
		rdv = t.rdvs[int(which)%len(t.rdvs)]
	}
	if rdv == nil || which&0x80 != 0 {
		id := r.nextID()
		r.breaks(t, fmt.Sprintf("DATA for send %d, which it never announced", id))
		r.send(t, s, frame.Header{Kind: frame.KindData, Tag: 1, Aux: 1 << 16, Offset: id}, content(id, int(lb)))
		return
	}
	k := 1 + int(kb)%2
	if kb&0x80 != 0 {
		k = int(kb) // any piece count
	}
	i := int(ib) % max(k, 1)
	if ib&0x80 != 0 {
		i = int(ib)
	}
	if !rdv.cts && !rdv.refused && r.fence(nil, t) {
		r.collect() // a CTS sent before the fence has come
	}
	lo, hi := 0, 0
	if k > 0 && i < k {
		lo, hi = piece(rdv.n, k, i)
	}
	n := hi - lo
	switch lb % 4 {
	case 1:
		n++
	case 2:
		n = max(n-1, 0)
	}
	p := content(r.nextID(), n)
	switch {
	case !rdv.cts || rdv.refused:
		r.breaks(t, fmt.Sprintf("DATA for send %d, which no receive took", rdv.id))
	case k < 1 || i >= k || (k != 1 && k != r.streams) || rdv.k != 0 && rdv.k != k:
		r.breaks(t, fmt.Sprintf("DATA piece %d of %d for send %d (pieces %d)", i, k, rdv.id, rdv.k))
	case rdv.sent&(1<<i) != 0:
		r.breaks(t, fmt.Sprintf("DATA piece %d of send %d again", i, rdv.id))
	case n != hi-lo:
		r.breaks(t, fmt.Sprintf("DATA piece %d of %d for send %d of %d bytes, not %d", i, k, rdv.id, n, hi-lo))
	default:
		rdv.k, rdv.sent = k, rdv.sent|1<<i
		copy(rdv.msg.data[lo:hi], p)
		r.logf("DATA to %d send %d piece %d/%d on stream %d", t.rank, rdv.id, i, k, s)
		r.send(t, s, frame.Header{Kind: frame.KindData, Tag: rdv.tag, Aux: uint32(k)<<16 | uint32(i), Offset: rdv.id}, p)
		return
	}
	rdv.bad = true
	r.send(t, s, frame.Header{Kind: frame.KindData, Tag: rdv.tag, Aux: uint32(k)<<16 | uint32(i), Offset: rdv.id}, p)
}

// opWithdraw withdraws one of the raw rank's rendezvous messages (or an
// unknown one): on data stream 0, behind its RTS, without credit; or, in
// a mesh when the script says so, on the control stream, credited, where
// it may overtake its RTS and leave a tombstone that drops the RTS when it
// comes (frame/spec.md, "Streams and striping"). A tombstone of an unknown send holds
// its credit for good: the raw rank's model counts it used.
func (r *peerRun) opWithdraw() {
	t, which, how := r.target(r.u8()), r.u8(), r.u8()
	var p [frame.RTSSize]byte
	s := 0
	if how&1 != 0 && !r.w.raw.star {
		sent, _ := r.credited(t, frame.Cost(0), how&2 != 0)
		if !sent {
			return
		}
		s = ctlStreamIndex
	}
	if len(t.rdvs) == 0 || which&0x80 != 0 {
		id := r.nextID()
		if s == ctlStreamIndex {
			*t.tombs++ // a tombstone, for good unless an RTS comes after it
		}
		r.logf("RTS|Error to %d for unknown send %d on stream %d", t.rank, id, s)
		r.send(t, s, frame.Header{Kind: frame.KindRTS, Flags: frame.FlagError, Tag: 1, Offset: id}, p[:])
		return
	}
	rdv := t.rdvs[int(which)%len(t.rdvs)]
	if rdv.withdrawn || rdv.refused {
		r.breaks(t, fmt.Sprintf("a second withdrawal of send %d", rdv.id))
	}
	rdv.withdrawn = true
	frame.EncodeRTS(&p, uint64(rdv.n))
	r.logf("RTS|Error to %d send %d on stream %d", t.rank, rdv.id, s)
	r.send(t, s, frame.Header{Kind: frame.KindRTS, Flags: frame.FlagError, Tag: rdv.tag, Offset: rdv.id}, p[:])
}

func (r *peerRun) opCTS() {
	t, which, flags := r.target(r.u8()), r.u8(), r.u8()
	rp := r.w.raw
	var keys []rtsKey
	rp.mu.Lock()
	for k, st := range rp.rts {
		if k.from == t.rank && (!st.answered || which&0x40 != 0) {
			keys = append(keys, k)
		}
	}
	rp.mu.Unlock()
	id := r.nextID()
	if len(keys) > 0 && which&0x80 == 0 {
		// Map order is random: take the smallest id, for a reproducible script.
		k := keys[0]
		for _, c := range keys {
			if c.id < k.id {
				k = c
			}
		}
		id = k.id
		rp.mu.Lock()
		st := rp.rts[k]
		if st.answered {
			r.breaks(t, fmt.Sprintf("a second CTS for send %d", id))
		}
		st.answered, st.data = true, flags&1 == 0
		rp.mu.Unlock()
	} else {
		r.breaks(t, fmt.Sprintf("a CTS for send %d, which is not waiting", id))
	}
	h := frame.Header{Kind: frame.KindCTS, Offset: id}
	if flags&1 != 0 {
		h.Flags = frame.FlagError
	}
	r.logf("CTS (flags %#x) to %d for send %d", h.Flags, t.rank, id)
	r.send(t, 0, h, nil)
}

func (r *peerRun) opCredit() {
	t, mode, n := r.target(r.u8()), r.u8(), uint64(r.u16())
	rp := r.w.raw
	rp.mu.Lock()
	switch mode % 3 {
	case 0:
		rp.given[t.rank] += n
	case 1:
		rp.given[t.rank] += n << 20
	}
	total := rp.given[t.rank]
	rp.mu.Unlock()
	if mode%3 == 2 {
		total = n // a total below what it granted: no news
	}
	r.logf("CREDIT to %d total %d", t.rank, total)
	r.send(t, 0, frame.Header{Kind: frame.KindCredit, Offset: total}, nil)
}

// heapSize and maxFrame are the real ranks' (peerOpts).
const (
	heapSize = 1 << 20
	maxFrame = 256 << 10
)

// offset decodes a heap offset: inside, at the end, or far outside.
func offset(b byte, x uint16) uint64 {
	switch b % 4 {
	case 0:
		return uint64(x)
	case 1:
		return heapSize - uint64(x)
	case 2:
		return heapSize + uint64(x)
	}
	return ^uint64(0) - uint64(x)
}

func (r *peerRun) opPut() {
	t, ob, x, sz, flags := r.target(r.u8()), r.u8(), r.u16(), size(r.u8()), r.u8()
	h := frame.Header{Kind: frame.KindPut, Offset: offset(ob, x)}
	if flags&1 != 0 {
		h.Flags = frame.FlagMore
	}
	r.logf("PUT to %d at %d, %d bytes", t.rank, h.Offset, sz)
	r.send(t, 0, h, content(r.nextID(), sz))
}

func (r *peerRun) opGetReq() {
	t, ob, x, n := r.target(r.u8()), r.u8(), r.u16(), uint64(size(r.u8()))
	var p [frame.GetReqSize]byte
	id := r.nextID() | 1<<62
	(&frame.GetReq{ID: id, Length: n}).Encode(&p)
	r.logf("GET_REQ to %d at %d, %d bytes", t.rank, offset(ob, x), n)
	r.send(t, 0, frame.Header{Kind: frame.KindGetReq, Offset: offset(ob, x)}, p[:])
}

func (r *peerRun) opGetReply() {
	t, which, mode := r.target(r.u8()), r.u8(), r.u8()
	var g *fuzzOp
	var ids []uint64
	for id := range t.gets {
		ids = append(ids, id)
	}
	if len(ids) > 0 && which&0x80 == 0 {
		min := ids[0]
		for _, id := range ids {
			min = minU(min, id)
		}
		g = t.gets[min]
	}
	id := r.nextID() | 1<<61
	n := size(which)
	if g != nil {
		id, n = g.id, len(g.dst)
		delete(t.gets, g.id)
	}
	h := frame.Header{Kind: frame.KindGetReply, Offset: id}
	switch mode % 4 {
	case 1:
		n++
	case 2:
		h.Flags, h.Aux, n = frame.FlagError, 1, int(mode>>2)
	case 3:
		h.Flags, n = frame.FlagMore, max(n-1, 0)
	}
	p := content(id, n)
	if g != nil {
		g.answer, g.ansErr = p, h.Flags != 0
	}
	r.logf("GET_REPLY (flags %#x) to %d for %d, %d bytes", h.Flags, t.rank, id, n)
	r.send(t, 0, h, p)
}

func minU(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func (r *peerRun) opRPC() {
	t, kind, sz := r.target(r.u8()), r.u8(), size(r.u8())
	tg, aux, id := uint32(r.u16()), uint32(r.u16()), r.u64()
	h := frame.Header{Kind: frame.KindRPCReq, Tag: tg, Aux: aux, Offset: id}
	if kind&1 != 0 {
		h.Kind = frame.KindRPCReply
		if kind&2 != 0 {
			h.Flags = frame.FlagError
		}
	} else {
		cost := frame.Cost(uint64(sz))
		if cost > (64<<10)/2 {
			cost = frame.Cost(0) // discarded unread: see requestCost
		}
		if sent, _ := r.credited(t, cost, kind&4 != 0); !sent {
			return
		}
	}
	r.logf("%v to %d, %d bytes", h.Kind, t.rank, sz)
	r.send(t, 0, h, content(id, sz))
}

func (r *peerRun) opControl() {
	t, which, x := r.target(r.u8()), r.u8(), r.u8()
	if w := which % 6; w == 0 || w >= 3 {
		t = r.targets[0] // kinds a coordinator does not forward
	}
	switch which % 6 {
	case 0:
		r.send(t, 0, frame.Header{Kind: frame.KindHeartbeat}, nil)
	case 1:
		r.goodbye[t.rank] = true
		r.logf("GOODBYE to %d", t.rank)
		r.send(t, 0, frame.Header{Kind: frame.KindGoodbye, Offset: uint64(x), Aux: uint32(x)}, nil)
	case 2:
		r.send(t, 0, frame.Header{Kind: frame.KindPutAck, Flags: frame.FlagError, Aux: uint32(x), Offset: uint64(x)}, content(uint64(x), int(x)))
	case 3:
		r.breaks(t, "a HELLO after the handshake")
		r.send(t, 0, frame.Header{Kind: frame.KindHello}, make([]byte, frame.HelloSize))
	case 4:
		r.breaks(t, "an AUTH after the handshake")
		r.send(t, 0, frame.Header{Kind: frame.KindAuth, Flags: frame.FlagReply}, nil)
	case 5:
		r.breaks(t, "a REJECT after the handshake")
		r.send(t, 0, frame.Header{Kind: frame.KindReject, Aux: uint32(x)}, []byte("no"))
	}
}

// opRaw sends a header of any fields (but no SEND, RTS or DATA the rank
// would take: those go through their own steps, which keep the model).
func (r *peerRun) opRaw() {
	r.u8()
	h := frame.Header{Kind: frame.Kind(r.u8()), Flags: frame.Flags(r.u8()), Dst: r.u16() % 8, Tag: uint32(r.u16()), Aux: uint32(r.u16()), Offset: r.u64()}
	s := int(r.u8() % 2)
	if r.streams == 1 {
		s = 0
	}
	lb := r.u8()
	n := uint64(size(lb))
	if lb&0x80 != 0 {
		n = r.u64()
	}
	_, derr := frame.Decode(encodeHeader(h, n), maxFrame)
	reaches := h.Dst == 0 || r.w.star && h.Dst == 2 // a target, as a frame it takes
	switch h.Kind {
	case frame.KindSend, frame.KindRTS, frame.KindData, frame.KindRPCReq, frame.KindCTS, frame.KindGetReply:
	default:
		reaches = false
	}
	if derr == nil && reaches && s == 0 {
		h.Kind = frame.KindHeartbeat // the modelled kinds have steps of their own
		h.Flags, n = 0, 0
		_, derr = frame.Decode(encodeHeader(h, n), maxFrame)
	}
	for _, tg := range r.targets { // in a star, whoever it reaches
		r.breaks(tg, fmt.Sprintf("a raw %v header (flags %#x, dst %d, length %d, stream %d)", h.Kind, h.Flags, h.Dst, n, s))
	}
	h.Src = uint32(rawRank) // in a star, Dst 0 is the coordinator, 2 worker 1, and 1, 3 (itself) and above are not forwarded
	h.Length = n
	var p []byte
	if derr == nil {
		p = content(h.Offset, int(n))
	} else {
		r.stopped = true // refused unread: nothing may follow
	}
	if derr == nil && h.Kind == frame.KindGoodbye {
		r.goodbye[r.targets[0].rank] = true // said, as opControl's: the peer's loss is then its close
	}
	r.logf("raw %+v on stream %d (decode: %v)", h, s, derr)
	if err := r.w.raw.conn(0, s, h).write(h, p); err != nil {
		r.stopped = true
	}
}

// awaitCTS waits (a while) until a rendezvous message of the raw rank to
// t that had no answer has one.
func (r *peerRun) awaitCTS(t *fuzzTarget) {
	unanswered := func() int {
		n := 0
		for _, rdv := range t.rdvs {
			if !rdv.cts && !rdv.refused {
				n++
			}
		}
		return n
	}
	n := unanswered()
	for end := time.Now().Add(fuzzWait); unanswered() >= n && time.Now().Before(end) && r.w.raw.deadErr() == nil; {
		select {
		case <-r.w.raw.changed():
		case <-time.After(time.Millisecond):
		}
		r.collect()
	}
}

// encodeHeader returns h with Length n, encoded.
func encodeHeader(h frame.Header, n uint64) []byte {
	h.Length = n
	var b [frame.HeaderSize]byte
	h.Encode(&b)
	return b[:]
}

func (r *peerRun) opRankRecv() {
	t, tg, mode := r.target(r.u8()), int(tag(r.u8())), r.u8()
	rv := &fuzzRecv{tag: tg, into: mode&1 != 0, cap: size(mode >> 2), done: make(chan struct{})}
	if mode&3 == 3 {
		rv.cap = 0 // into a nil buffer
	}
	// Receives match in the order they are posted: post this one before
	// the script goes on, once the frames sent before are in.
	if !r.fence(nil, t) {
		return
	}
	t.recvs = append(t.recvs, rv)
	r.logf("rank %d posts a receive, tag %d into %v (%d)", t.rank, tg, rv.into, rv.cap)
	before, claimed := engine.PostedRecvs(t.tr, rawRank), engine.ClaimedRdvs(t.tr, rawRank)
	defer func() {
		deadline := time.Now().Add(fuzzWait)
		for engine.PostedRecvs(t.tr, rawRank) <= before && time.Now().Before(deadline) {
			select {
			case <-rv.done:
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
		if engine.ClaimedRdvs(t.tr, rawRank) > claimed {
			r.awaitCTS(t) // it took a queued RTS: its CTS is on the way
		}
	}()
	r.rankOps.Go(func() {
		defer close(rv.done)
		if rv.into {
			buf := make([]byte, rv.cap)
			if mode&3 == 3 {
				buf = nil
			}
			rv.n, rv.err = t.tr.RecvIntoContext(r.ctx, rawRank, tg, buf)
			if rv.err == nil {
				rv.data = buf[:rv.n]
			}
			return
		}
		rv.data, rv.err = t.tr.RecvContext(r.ctx, rawRank, tg)
		rv.n = len(rv.data)
	})
}

func (r *peerRun) opRankSend() {
	t, tg, sz := r.target(r.u8()), int(tag(r.u8())), size(r.u8())<<(r.u8()%3)
	o := &fuzzOp{what: fmt.Sprintf("rank %d's send of %d bytes, tag %d", t.rank, sz, tg), done: make(chan struct{})}
	t.ops = append(t.ops, o)
	p := content(r.nextID(), sz)
	r.logf("%s", o.what)
	r.rankOps.Go(func() {
		defer close(o.done)
		o.err = t.tr.SendContext(r.ctx, rawRank, tg, p)
	})
}

func (r *peerRun) opRankGet() {
	t, ob, x, n := r.target(r.u8()), r.u8(), r.u16(), size(r.u8())
	off := offset(ob%2, x) // the rank checks its own heap's bounds first
	o := &fuzzOp{what: fmt.Sprintf("rank %d's get of %d bytes at %d", t.rank, n, off), done: make(chan struct{}), dst: make([]byte, n)}
	t.ops = append(t.ops, o)
	r.logf("%s", o.what)
	req, err := t.tr.GetNB(engine.SymmetricBuffer{Rank: rawRank, Offset: off, Len: uint64(n)}, o.dst)
	if err != nil {
		o.err = err
		close(o.done)
		return
	}
	o.id = ^uint64(0) // not yet seen: collect fills it in
	r.rankOps.Go(func() {
		defer close(o.done)
		o.err = req.Wait()
	})
}
