package engine

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/boltmesh/boltmesh/frame"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Single copy between neighbours (frame/spec.md, "Single copy"). A
// message of at least Options.SingleCopyMin bytes to a neighbour that
// copies from this rank goes as an RTS with Copy that names where it
// lies, and the neighbour copies it from there itself (linkshm.ReadPeer)
// and answers CTS with Copy: its bytes are copied once, where through
// the pipe's ring they are copied in and out. Two flavours keep a send's
// meaning what it was:
//   - a message the sender would send eagerly uses its whole cost in
//     credit, and the receiver's event loop copies it at once: into the
//     receive posted for it, or into a buffer held as an eager SEND's
//     until a receive takes it (copyHeld). The send finishes without a
//     receive posted, as an eager one does.
//   - a longer one uses Cost(0), as any RTS, and waits for its receive,
//     which copies it (copyInto).
//
// The sender's buffer stays untouched until the answer, as a rendezvous
// send's always does (waitRdv waits for it even when withdrawn). Go's
// collector does not move heap memory, and a buffer handed to a send
// lives in the heap (the rdvSend holds it) or in memory mapped outside
// it: the address stays good until then.
//
// Whether a pair may is learned when it meets (internal/link/shm's
// meeting, meet.go): each side sends the address and value of its probe,
// a random word in its memory, and reads the other's; the acceptor's answer says whether it read the
// dialer's right, and the dialer's last word whether it read the
// acceptor's. A pair where the kernel refuses (another user, Yama's
// ptrace_scope, a container's seccomp) keeps the rings, and says so once
// in the log. A copy that fails after that drops the neighbour with
// ErrSingleCopy: it is gone, or it named memory it does not have; to
// fall back to the ring then would let later messages overtake it.

// SingleCopyMechanism names how this system copies a message from a
// neighbour's memory: "cma" (Linux's cross memory attach,
// process_vm_readv), or "" where it cannot (neighbours keep the rings).
const SingleCopyMechanism = linkshm.SingleCopy

// copyState is a peer's single copy's count: whether the pair copies is
// its caps' (caps.copy).
type copyState struct {
	count atomic.Uint64 // messages this rank copied from the peer
}

// rtsCredit is the credit an RTS for a message of n bytes to p, whose
// window is window, uses: a message by single copy that would be sent
// eagerly uses its whole cost, as a SEND would, since the receiver copies
// it at once and holds it until a receive takes it (so that a send to a
// neighbour finishes, as an eager one does, without a receive posted);
// any other, Cost(0).
// copied is p.copies(n).
func (p *peer) rtsCredit(n int, window uint64, copied bool) uint64 {
	if c := frame.Cost(uint64(n)); copied && !p.t.striped(p, n) && c <= p.t.opts.eagerMax(window) {
		return c
	}
	return frame.Cost(0)
}

// encodeRTS fills s's RTS payload, whose RTS uses credit, and returns it,
// with its flags: with the message's address and the credit where it goes
// by single copy (copied).
func (s *rdvSend) encodeRTS(copied bool, credit uint64) ([]byte, frame.Flags) {
	if copied {
		s.copy = frame.FlagCopy
		frame.EncodeRTSCopy(&s.rts, uint64(len(s.data)), uint64(uintptr(unsafe.Pointer(unsafe.SliceData(s.data)))), credit)
		return s.rts[:], frame.FlagCopy
	}
	frame.EncodeRTS((*[frame.RTSSize]byte)(s.rts[:frame.RTSSize]), uint64(len(s.data)))
	return s.rts[:frame.RTSSize], 0
}

// rtsCopy is what an RTS with Copy adds to a plain one: where the message
// lies in the sender's memory, and the credit it uses beyond Cost(0):
// none for a message that waits for a receive, as any RTS's does, the
// rest of its cost for one to copy at once.
type rtsCopy struct {
	addr, extra uint64
}

// decodeRTSCopy reads the payload of an RTS with Copy from p, which only
// a neighbour this rank copies from may send.
func (p *peer) decodeRTSCopy(b []byte) (uint64, rtsCopy, error) {
	n, addr, credit, err := frame.DecodeRTSCopy(b, p.t.opts.MaxFrame)
	switch {
	case err != nil:
		return 0, rtsCopy{}, err
	case !p.can().copy.In:
		return 0, rtsCopy{}, fmt.Errorf("%w: RTS with Copy from a rank this one does not copy from", ErrProtocol)
	case addr == 0:
		return 0, rtsCopy{}, fmt.Errorf("%w: RTS with Copy at address 0", ErrProtocol)
	}
	return n, rtsCopy{addr: addr, extra: credit - frame.Cost(0)}, nil
}

// queueCopy notes that the queued RTS id names addr. p.mu is held.
func (r *rdvState) queueCopy(id, addr uint64) {
	if r.copyAt == nil {
		r.copyAt = make(map[uint64]uint64)
	}
	r.copyAt[id] = addr
}

// takeCopy returns and forgets where the message of the queued RTS id
// lies, or 0 for a plain RTS. p.mu is held.
func (r *rdvState) takeCopy(id uint64) uint64 {
	if len(r.copyAt) == 0 {
		return 0
	}
	addr := r.copyAt[id]
	delete(r.copyAt, id)
	return addr
}

// copyInto completes r, claimed for the message of RTS id, by copying it
// from the peer's memory (cp), and answers CTS with Copy. A copy that
// fails drops the peer (copyFailed): the meeting found it possible, so
// the neighbour is gone, or it named memory it does not have. c is the
// stream the RTS came on, or nil. p.mu is not held.
func (p *peer) copyInto(c *ioloop.Conn, r *recvReq, id uint64, cp rtsCopy) {
	if err := linkshm.ReadPeer(p.can().copy.Pid, cp.addr, r.dst); err != nil {
		r.complete(p.copyFailed(c, err))
		return
	}
	r.n = len(r.dst)
	if c != nil {
		p.freeInRead(frame.Cost(0) + cp.extra)
	} else {
		p.freeCredit(frame.Cost(0) + cp.extra)
	}
	p.copied(id)
	r.complete(nil)
}

// copyHeld takes the message of RTS id (n bytes, tag, aux), which no
// receive has posted for, by copying it into a buffer that waits for its
// receive as an eager SEND's would, holding the RTS's credit (its whole
// cost) until then. c is the stream the RTS came on.
func (p *peer) copyHeld(c *ioloop.Conn, tag, aux uint32, id, n uint64, cp rtsCopy) {
	bb := ioloop.GetBuffer(int(n))
	if err := linkshm.ReadPeer(p.can().copy.Pid, cp.addr, bb.B); err != nil {
		ioloop.PutBuffer(bb)
		p.copyFailed(c, err)
		return
	}
	p.copied(id)
	p.deliverSend(tag, aux, bb)
}

// copied answers RTS id with CTS with Copy: the message is in.
func (p *peer) copied(id uint64) {
	p.copy.count.Add(1)
	h := frame.Header{Kind: frame.KindCTS, Flags: frame.FlagCopy, Src: uint32(p.t.rank), Offset: id}
	p.link.post(laneCtl, h, nil, false) // a lost peer needs no answer
}

// copyFailed drops p, whose message this rank failed to copy (err, from
// linkshm.ReadPeer), and returns the error of the receive that wanted it.
func (p *peer) copyFailed(c *ioloop.Conn, err error) error {
	err = fmt.Errorf("%w: %w", ErrSingleCopy, err) // the loss logs it
	if c != nil {
		c.Abort(err)
	}
	p.link.abort(c, err)
	return &PeerError{Op: "recv", Rank: p.rank, Err: ErrPeerLost, Cause: err}
}
