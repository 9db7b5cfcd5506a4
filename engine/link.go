package engine

import (
	"time"

	"github.com/boltmesh/boltmesh/frame"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Links. Beneath the matcher (peer), a link is what moves one peer's
// frames. There is one kind per way two ranks are joined:
//
//	meshLink   (link_mesh.go)    a full mesh: a control stream and Options.Streams
//	                             data streams; a large message is striped over them;
//	                             between neighbours, a data and a control pipe in
//	                             shared memory (link_mesh.go, medium.go)
//	streamLink (link_stream.go)  a star's worker and its coordinator: one stream
//	                             that carries everything (and, at the coordinator,
//	                             the frames it forwards between workers)
//	routeLink  (link_routed.go)  two star workers: the worker's stream to the
//	                             coordinator, each frame addressed by Dst
//
// This rank itself has no link (peer.link is nil). A link sends a frame
// on one of its lanes, hands every frame that arrives to its peer's
// payload and arrive (kinds.go) with the lane it came on, reports its loss
// to the peer's closed, and watches its streams for silence (heartbeats,
// link_live.go). Above the link nothing knows which kind a peer has.

// lane names what a frame travels with. Lane 0 (laneData) carries SEND,
// RTS and DATA, in order; lanes 1..width()-1 carry only the pieces of a
// striped message's DATA; laneCtl carries everything else (one-sided
// operations, RPC, credit, CTS, withdrawals, abandons, heartbeats,
// GOODBYE). A link with one stream carries every lane on it.
type lane int

const (
	laneData lane = 0  // SEND, RTS and DATA, in order
	laneCtl  lane = -1 // every other frame
)

// link moves one peer's frames. Its methods are safe for concurrent use;
// the sending ones return the ioloop error of the stream (the caller turns
// it into the peer's loss with connErr).
type link interface {
	// handler returns the handler of the link's stream s (its index among
	// the peer's connections), as adopt registers it.
	handler(s int) ioloop.Handler
	// attach takes c as stream s, as the event loop adopts it and before
	// any frame is read from it, and reports whether the link is now up
	// with its control lane (the window may open).
	attach(s int, c *ioloop.Conn) bool
	// usePair makes the lanes pipes in the memory a neighbour pair shares
	// (medium.go, neighbourStep), before any stream is attached: a full mesh's link
	// only.
	usePair(pair *linkshm.Pair) error
	// up reports whether the link's first data stream is registered.
	up() bool
	// post queues h (its Dst set by the link) and its payload on lane l
	// without waiting; see ioloop.Conn.Post.
	post(l lane, h frame.Header, p []byte, copyPayload bool) error
	// send writes h and its payload on lane l and waits until they are out
	// or cancel closes; see ioloop.Conn.SendCancel.
	send(l lane, h frame.Header, p []byte, cancel <-chan struct{}) error
	// start starts writing h and its payload on lane l; see ioloop.Conn.Start.
	start(l lane, h frame.Header, p []byte) (ioloop.Write, error)
	// queue queues h and its payload on lane l, unwritten until flush or
	// the next frame on it; see ioloop.Conn.Queue.
	queue(l lane, h frame.Header, p []byte) error
	// flush writes what queue left queued on lane l.
	flush(l lane)
	// resume reads the data lanes again after the matcher held a payload
	// back (ioloop.Conn.Defer) or a forwarder paused them.
	resume()
	// poll reads what has arrived on the data lanes (laneData) or on the
	// control lane (laneCtl), on the calling goroutine.
	poll(l lane)
	// polling tells lane l's streams that a goroutine starts (on) or
	// stops polling them in a loop; see ioloop.Conn.Polling.
	polling(l lane, on bool)
	// polled is polling(l, false) for a goroutine that got what it polled
	// for and will likely poll again soon: a neighbour's data pipe then
	// asks for a bell only once nobody has polled it for a moment
	// (ioloop.Conn.Polled); other streams stop as with polling.
	polled(l lane)
	// bytesRead sums the bytes read on the data lanes, or the control lane.
	bytesRead(l lane) uint64
	// width is the number of data lanes: how many pieces a striped
	// message is cut into (1: no striping).
	width() int
	// ownCtl reports whether the control lane is a stream of its own, so
	// that nothing on it waits behind the data lanes (a full mesh).
	ownCtl() bool
	// checkLive is one heartbeat check of the link's streams (link_live.go).
	checkLive(now time.Time)
	// cause returns err, the end of one of the link's streams, as the
	// cause of the peer's loss: the link may know better (link_live.go).
	cause(err error) error
	// abort drops the whole link for err, which c (one of its streams, or
	// nil) may have been aborted for already.
	abort(c *ioloop.Conn, err error)
	// lastWord writes the peer a DROP for err, a fault this rank found on
	// c, one of the link's streams about to end, on each of its streams
	// that takes it at once; once per link, and nothing for an err that
	// is no fault this rank found (lastword.go).
	lastWord(c *ioloop.Conn, err error)
	// close closes the link's streams but the first, whose end the peer
	// sees as its loss (peer.closed).
	close()
}

// oneStream is what the links of one stream (streamLink, routeLink) do
// alike: every lane is conn, which is set once, as the event loop adopts
// the stream and before any frame is read from it.
type oneStream struct{ conn *ioloop.Conn }

func (o *oneStream) up() bool { return o.conn != nil }

func (o *oneStream) flush(lane) { o.conn.Flush() }

func (o *oneStream) resume() { o.conn.Resume() }

func (o *oneStream) poll(lane) { o.conn.Poll() }

func (o *oneStream) polling(lane, bool) {} // TCP: nothing to tell

func (o *oneStream) polled(lane) {}

func (o *oneStream) bytesRead(lane) uint64 { return o.conn.BytesRead() }

func (o *oneStream) width() int { return 1 }

func (o *oneStream) ownCtl() bool { return false }

func (o *oneStream) abort(c *ioloop.Conn, err error) {
	if o.conn != nil && o.conn != c {
		o.conn.Abort(err)
	}
}

func (o *oneStream) close() {}
