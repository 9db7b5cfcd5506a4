package engine

import (
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/ioloop"
)

// Receive request states, and reqSpun, a flag beside posted and claimed:
// a spinner watches the state (wait). A completer that finds reqSpun as
// it stores reqDone sends no token, and the spinner, seeing reqDone after
// it set the flag, takes none: a receive that its own spinner completes
// (it drove the connection that brought the message) goes through no
// channel, whose send and receive cost a runtime lock and unlock each.
// A spinner that stops before the receive is done takes the flag back,
// unless reqDone came first.
const (
	reqPosted  = iota // waiting in a tag queue
	reqClaimed        // a frame's payload is being read into it
	reqDone           // completed; done holds a token unless reqSpun was set
	reqSpun    = 1 << 8
)

// recvReq is one pending receive. It is recycled through a pool.
type recvReq struct {
	into  bool   // RecvInto: fill dst; otherwise hand over data
	dst   []byte // RecvInto destination
	from  int
	tag   int
	n     int    // bytes received
	aux   uint32 // the message header's Aux
	owned bool   // a receive on the owned range, expecting meta
	meta  uint32
	// settled: over as it was posted (plumb.Wire.Post: a queued message
	// filled it, or it failed), with no token sent: its wait takes none.
	settled bool
	data    []byte // Recv: the message
	rdv     rdvPieces
	err     error
	state   atomic.Uint32 // a state, with reqSpun
	done    chan struct{} // buffered 1: completion token
	timer   *time.Timer
}

// rdvPieces is the progress of a rendezvous message's DATA into a receive.
type rdvPieces struct {
	id      uint64 // the send id
	left    int    // bytes of DATA still to come
	seen    uint32 // the DATA pieces that came, a bit each
	pieces  int    // the number of pieces, from the first that came
	reading int    // pieces being read into the buffer now (fill.go)
	broken  error  // why a piece's stream ended before the piece was whole, if one did
}

func newRecvReq() any { return &recvReq{done: make(chan struct{}, 1)} }

// complete publishes the outcome and wakes the waiter: with the token,
// unless a spinner watches (reqSpun).
func (r *recvReq) complete(err error) {
	r.err = err
	if r.state.Swap(reqDone)&reqSpun != 0 {
		return // its spinner sees reqDone
	}
	r.done <- struct{}{}
}

// fits reports whether a message of n bytes can complete r.
func (r *recvReq) fits(n int) bool { return !r.into || n <= len(r.dst) }

// take completes r with the message in bb, which r's owner then holds: for
// RecvInto it is copied into dst and bb is recycled; for Recv the buffer
// itself becomes the caller's.
func (r *recvReq) take(bb *ioloop.Buffer, aux uint32) {
	r.fill(bb, aux)
	r.complete(nil)
}

// fill is take without the completion: for a receive that found its
// message queued, whose caller is the one waiting.
func (r *recvReq) fill(bb *ioloop.Buffer, aux uint32) {
	r.aux = aux
	if r.into {
		r.n = copy(r.dst, bb.B)
		ioloop.PutBuffer(bb)
	} else {
		r.data = bb.B
		r.n = len(bb.B)
	}
}

func (r *recvReq) truncated(n int) *TruncatedError {
	return &TruncatedError{From: r.from, Tag: r.tag, Len: n, Cap: len(r.dst)}
}

func (r *recvReq) reset() {
	r.dst, r.data, r.err, r.n, r.aux, r.owned, r.meta, r.rdv = nil, nil, nil, 0, 0, false, 0, rdvPieces{}
	r.settled = false
	r.state.Store(reqPosted)
}
