package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
)

// meshLink joins two ranks of a full mesh: Options.Streams data streams
// (lane i is stream i; stream 0 carries SEND, RTS and DATA, the others
// only the pieces of striped DATA) and one control stream for everything
// else. So nothing on the control lane ever waits behind a message nobody
// has received yet: a large eager SEND that arrives before its receive may
// stay in stream 0's socket until a receive from its sender is posted
// (ioloop.Conn.Defer, see peer.maybeDefer), to be read straight into that
// receive's buffer, as nothing behind it there is needed by anything but
// a receive. Striping: a SEND of at least Options.StripeMin bytes goes by
// rendezvous (rendezvous.go) and its DATA is cut into one piece per data
// stream, each read straight into its place in the receive's buffer (see
// frame/spec.md).
//
// Lock rule: mu guards the writes of data while the mesh forms (attach)
// and the reads that may race with them (close, stream); once the link is
// up, data is only read, and the hot paths read it without mu. ctl is an
// atomic: credit may be granted before the control stream is attached.
// watch belongs to the heartbeat goroutine (link_live.go).
//
// Between neighbours (medium.go) the link's lanes are two pipes in
// shared memory instead (usePipes): data is the data pipe alone and
// ctl the control pipe, while the pair's TCP streams, tcp, stay open and
// carry nothing. pipes is set, under mu, before either pipe or the TCP
// control stream is attached.
type meshLink struct {
	p       *peer
	streams int // the pair's TCP data streams (Options.Streams); the control stream's index
	mu      sync.Mutex
	data    []*ioloop.Conn              // the data streams; data[0] carries SEND, RTS and DATA
	ctl     atomic.Pointer[ioloop.Conn] // the control stream
	live    liveness                    // why the heartbeat goroutine dropped the link
	watch   []streamWatch               // one per stream: the data streams', then the control stream's
	pipes   atomic.Bool                 // the lanes are pipes (usePipes)
	tcp     []*ioloop.Conn              // with pipes: the pair's TCP streams, idle
}

var _ link = (*meshLink)(nil)

func newMeshLink(p *peer, streams int) *meshLink {
	return &meshLink{p: p, streams: streams, data: make([]*ioloop.Conn, streams), watch: make([]streamWatch, streams+1)}
}

// handler returns the handler of the link's stream s: the control stream
// is index len(data).
func (l *meshLink) handler(s int) ioloop.Handler {
	if s == l.streams {
		return &meshStream{l: l, lane: laneCtl}
	}
	return &meshStream{l: l, lane: lane(s)}
}

// attach registers c as stream s, as the event loop adopts it, and
// reports whether the link is now up with its control stream.
func (l *meshLink) attach(s int, c *ioloop.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pipes.Load() {
		l.tcp = append(l.tcp, c)
		return false
	}
	if s == l.streams {
		l.ctl.Store(c)
	} else {
		l.data[s] = c
	}
	return l.data[0] != nil && l.ctl.Load() != nil
}

// conn returns the stream of lane n, the control stream or a data
// stream; nil until it is attached. (No fallback to data stream 0: the
// peer refuses control frames there.)
func (l *meshLink) conn(n lane) *ioloop.Conn {
	if n == laneCtl {
		return l.ctl.Load()
	}
	return l.data[n]
}

func (l *meshLink) up() bool { return l.data[0] != nil }

func (l *meshLink) post(n lane, h frame.Header, p []byte, copyPayload bool) error {
	c := l.conn(n)
	if c == nil {
		return errUnlinked
	}
	return c.Post(&h, p, copyPayload)
}

func (l *meshLink) send(n lane, h frame.Header, p []byte, cancel <-chan struct{}) error {
	c := l.conn(n)
	if c == nil {
		return errUnlinked
	}
	return c.SendCancel(&h, p, cancel)
}

func (l *meshLink) start(n lane, h frame.Header, p []byte) (ioloop.Write, error) {
	c := l.conn(n)
	if c == nil {
		return ioloop.Write{}, errUnlinked
	}
	return c.Start(&h, p)
}

func (l *meshLink) queue(n lane, h frame.Header, p []byte) error {
	c := l.conn(n)
	if c == nil {
		return errUnlinked
	}
	return c.Queue(&h, p)
}

func (l *meshLink) flush(n lane) {
	if c := l.conn(n); c != nil {
		c.Flush()
	}
}

func (l *meshLink) resume() { l.data[0].Resume() }

func (l *meshLink) poll(n lane) {
	if n == laneCtl {
		if c := l.ctl.Load(); c != nil {
			c.Poll()
		}
		return
	}
	for _, c := range l.data {
		c.Poll()
	}
}

func (l *meshLink) polling(n lane, on bool) {
	if !l.pipes.Load() {
		return // TCP streams: nothing to tell
	}
	if c := l.conn(n); c != nil {
		c.Polling(on)
	}
}

func (l *meshLink) polled(n lane) {
	if !l.pipes.Load() {
		return
	}
	if c := l.conn(n); c != nil && n == laneData {
		c.Polled() // only the data pipe: the control pipe's frames are the loop's to serve at once
	} else if c != nil {
		c.Polling(false)
	}
}

func (l *meshLink) bytesRead(n lane) uint64 {
	if n == laneCtl {
		if c := l.ctl.Load(); c != nil {
			return c.BytesRead()
		}
		return 0
	}
	var sum uint64
	for _, c := range l.data {
		sum += c.BytesRead()
	}
	return sum
}

func (l *meshLink) width() int { return len(l.data) }

func (l *meshLink) ownCtl() bool { return l.ctl.Load() != nil }

// checkLive checks every stream of the link: each data stream (between
// neighbours, the data pipe), and the control stream. A data stream this
// rank does not read is not counted silent: a payload waits in it for
// its receive (ioloop.Conn.Deferred), or its reading stopped, whether or
// not this rank's own frames on it move (the peer, alive on the control
// stream, may be the one that defers: its own stream then stops reading
// this rank's frames, which stop this rank's reading in turn).
func (l *meshLink) checkLive(now time.Time) {
	for i := range l.watch {
		n := lane(i)
		if i == l.streams {
			n = laneCtl
		}
		c := l.watched(n)
		held := n != laneCtl && c != nil && (c.Deferred() || c.Stopped())
		if !l.live.check(l.p, c, &l.watch[i], n.String(), held, now) {
			return
		}
	}
}

// watched returns the stream of lane n, under mu (attach may still be
// filling the streams in), or nil: not attached yet, or a data stream
// past the one data pipe of neighbours.
func (l *meshLink) watched(n lane) *ioloop.Conn {
	if n == laneCtl {
		return l.ctl.Load()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(n) < len(l.data) {
		return l.data[n]
	}
	return nil
}

func (l *meshLink) cause(err error) error { return l.live.cause(l.p.toldCause(err)) }

func (l *meshLink) abort(c *ioloop.Conn, err error) {
	for _, s := range l.all(0) {
		if s != c {
			s.Abort(err)
		}
	}
}

func (l *meshLink) lastWord(c *ioloop.Conn, err error) {
	if l.live.fault.Load() != nil {
		return // said, as the first of the link's streams to end was about to
	}
	streams, at := l.lanes(c)
	h, words, ok := l.p.dropFrame(err, at)
	if !ok || !l.live.fault.CompareAndSwap(nil, &err) { // the cause, whatever the other streams report as they end
		return
	}
	for _, s := range streams {
		h := h
		if s == c {
			s.LastWord(&h, words) // failing: now or never
		} else {
			s.Post(&h, words, true) // a stream that has no room now goes without
		}
	}
}

// lanes returns the streams the link's frames go on (its data streams or
// data pipe, then its control stream), and the index of c among the
// pair's streams (the control stream's is l.streams), or -1.
func (l *meshLink) lanes(c *ioloop.Conn) ([]*ioloop.Conn, int) {
	l.mu.Lock()
	streams := make([]*ioloop.Conn, 0, len(l.data)+1)
	at := -1
	for i, s := range l.data {
		if s != nil {
			streams = append(streams, s)
		}
		if s == c {
			at = i
		}
	}
	l.mu.Unlock()
	if ctl := l.ctl.Load(); ctl != nil {
		streams = append(streams, ctl)
		if ctl == c {
			at = l.streams
		}
	}
	return streams, at
}

// readOthers reads what the link's streams but c hold now (waiting a
// moment for a reader under way): the end of c that the peer made may
// have a DROP behind it on another stream, which names the loss's cause
// (lastword.go).
func (l *meshLink) readOthers(c *ioloop.Conn) {
	streams, _ := l.lanes(c)
	for _, s := range streams {
		if s != c {
			s.ReadArrived(time.Millisecond)
		}
	}
}

func (l *meshLink) close() {
	for _, s := range l.all(1) {
		s.Close()
	}
}

// all returns the link's attached streams: its data streams from index
// from on, the idle TCP streams of neighbours and the control stream.
// (attach may still be filling them in.)
func (l *meshLink) all(from int) []*ioloop.Conn {
	l.mu.Lock()
	streams := make([]*ioloop.Conn, 0, len(l.data)+len(l.tcp)+1)
	for _, s := range l.data[from:] {
		if s != nil {
			streams = append(streams, s)
		}
	}
	streams = append(streams, l.tcp...)
	l.mu.Unlock()
	if c := l.ctl.Load(); c != nil {
		streams = append(streams, c)
	}
	return streams
}

// meshStream is the handler of one stream of a meshLink: it checks that
// each frame came on the lane that carries its kind and hands it to the
// peer. HEARTBEAT, GOODBYE and DROP may come on any stream (every stream
// is watched, link_live.go; a closing rank says GOODBYE on the control
// stream and data stream 0, so that whichever ends first, the peer's
// orderly close is known by then, see sayGoodbye; a DROP goes on every
// stream, lastword.go), and an RTS withdrawal on the control stream or
// data stream 0 (see withdrawRTS).
type meshStream struct {
	l    *meshLink
	lane lane
	pipe bool // a pipe, not a TCP stream
}

var _ ioloop.Failer = (*meshStream)(nil)

// Failing implements ioloop.Failer: the link's last word, if this rank
// ends it for a fault it found.
func (s *meshStream) Failing(c *ioloop.Conn, err error) {
	if !s.idle() {
		s.l.lastWord(c, s.l.cause(err))
	}
}

// carries reports whether a frame of h's kind may come on s.
func (s *meshStream) carries(h *frame.Header) bool {
	switch {
	case h.Dst != 0:
		return false // a mesh forwards nothing
	case h.Kind == frame.KindHeartbeat || h.Kind == frame.KindGoodbye || h.Kind == frame.KindDrop:
		return true
	case s.lane > laneData:
		return h.Kind == frame.KindData
	case h.Kind == frame.KindRTS && h.Flags&frame.FlagError != 0:
		return true // a withdrawal: either lane
	}
	return (s.lane == laneCtl) != dataKind(h)
}

// idle reports whether s is a TCP stream of a link whose lanes are
// pipes: it carries nothing.
func (s *meshStream) idle() bool { return !s.pipe && s.l.pipes.Load() }

// Payload implements ioloop.Handler.
func (s *meshStream) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	if s.idle() {
		s.l.p.violation(c, fmt.Errorf("%w: a %v frame on a TCP stream of neighbours, whose frames go through shared memory", ErrProtocol, h.Kind))
		c.Discard()
		return nil
	}
	if !s.carries(h) {
		s.l.p.violation(c, fmt.Errorf("%w: a %v frame (Dst %d) on %v, which does not carry it", ErrProtocol, h.Kind, h.Dst, s.lane))
		c.Discard()
		return nil
	}
	return s.l.p.payload(c, s.lane, h)
}

// Deliver implements ioloop.Handler.
func (s *meshStream) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	if s.idle() || !s.carries(h) {
		putBuffer(bb) // refused in Payload
		return
	}
	s.l.p.arrive(c, s.lane, h, payload, bb)
}

// Closed implements ioloop.Handler. Losing data stream 0 loses the peer;
// losing any other stream aborts stream 0. But the control stream may end
// on its own after the peer said GOODBYE: its data stream then ends once
// what it sent before is read. A control stream that ended because the
// peer broke the protocol there (a frame that does not decode, after a
// GOODBYE too) loses the peer.
func (s *meshStream) Closed(c *ioloop.Conn, err error) {
	if !s.idle() && peerEnded(err) {
		s.l.readOthers(c) // a DROP there names the cause
	}
	if !s.idle() {
		defer s.l.p.readEnded(s.lane, s.l.cause(err)) // once the peer's loss is noted, if this stream's end is it
	}
	switch {
	case s.idle():
		// The pipes see the peer's end, after what it sent before; a
		// violation here was reported by Payload. Bytes that are not a
		// frame drop the peer.
		if errors.Is(err, ioloop.ErrProtocol) {
			s.l.abort(c, err)
		}
	case s.lane == laneData:
		s.l.p.closed(s.l.cause(err))
	case s.lane == laneCtl && s.l.p.bye.closing() && !brokeProtocol(err):
	default:
		s.l.abort(c, err)
	}
}

// String names the lane in errors: "the control stream", "data stream i".
func (n lane) String() string {
	if n == laneCtl {
		return "the control stream"
	}
	return fmt.Sprintf("data stream %d", int(n))
}

// dataKind reports whether h is a frame of the data lanes: a SEND, an
// RTS (but a withdrawal), or DATA.
func dataKind(h *frame.Header) bool {
	switch h.Kind {
	case frame.KindSend, frame.KindData:
		return true
	case frame.KindRTS:
		return h.Flags&frame.FlagError == 0
	}
	return false
}

// peerEnded reports whether err, the end of a connection, is the peer's
// doing (its end of the stream, a reset), not this rank's (an abort, a
// close) nor a fault it found there.
func peerEnded(err error) bool {
	var ce *ioloop.ConnError
	return errors.As(err, &ce) && ce.Op != "abort" && ce.Op != "close" && dropFault(err) == 0
}

// brokeProtocol reports whether err, the end of a connection, is the
// peer's breach of the protocol rather than the connection's end.
func brokeProtocol(err error) bool {
	return errors.Is(err, ioloop.ErrProtocol) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrFlowControl)
}

// A neighbour's meshLink (medium.go, neighbourStep) has two pipes for lanes: the data
// pipe carries SEND, RTS and DATA, the control pipe everything else, each
// an ioloop.Conn over shared memory that the matcher cannot tell from a
// TCP stream. There is no striping: one copy in and one out at memory
// speed leave nothing for a second lane to add. The pair's TCP streams
// stay registered, idle (meshStream.idle); the end of either pipe's bell
// is the peer's end.

// usePipes turns the link's lanes into pipes, before either is attached:
// the TCP data streams attached so far, and every TCP stream attached
// from now on, are idle.
func (l *meshLink) usePipes() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.data {
		if c != nil {
			l.tcp = append(l.tcp, c)
		}
	}
	l.data = make([]*ioloop.Conn, 1)
	l.pipes.Store(true)
}

func (l *meshLink) usePair(pair *linkshm.Pair) error { return l.adoptPipes(pair) }

// attachPipe registers c as lane n's pipe, as the event loop adopts it,
// and reports whether both pipes are attached.
func (l *meshLink) attachPipe(n lane, c *ioloop.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n == laneCtl {
		l.ctl.Store(c)
	} else {
		l.data[0] = c
	}
	return l.data[0] != nil && l.ctl.Load() != nil
}

// adoptPipes makes l a neighbour's: the neighbour's heap
// mapped for one-sided operations, then both pipes registered with the
// event loop. Its window opens once both are attached.
func (l *meshLink) adoptPipes(pair *linkshm.Pair) error {
	p, t := l.p, l.p.t
	l.usePipes()
	mb := pair.Mailbox()
	mb.SetRing(func(barrier bool) { t.wake(p, barrier) })
	p.setCaps(&caps{cheap: true, mailbox: mb, heap: pair.MappedHeap(), copy: pair.Copy}) // the heap and mailbox are the peer's now: released at Close
	for _, n := range []lane{laneCtl, laneData} {
		take := pair.DataPipe
		if n == laneCtl {
			take = pair.CtlPipe
		}
		mem, bell, release := take()
		open := false
		s, err := linkshm.Open(mem, pair.Side(), bell, release)
		if err != nil {
			pair.CloseBells() // the other pipe's, if it was not opened
			return err
		}
		_, err = t.loop.RegisterStream(s, p.rank, &meshStream{l: l, lane: n, pipe: true}, func(c *ioloop.Conn) {
			ready := l.attachPipe(n, c)
			p.mu.Lock()
			defer p.mu.Unlock()
			open = ready && !p.windowOpen
			p.windowOpen = p.windowOpen || open
		})
		if err != nil {
			pair.CloseBells() // the other pipe's, if it was not registered
			return err
		}
		if open {
			p.openWindow()
		}
	}
	return nil
}

// Drained writes the grants this drain's upcalls recorded (credit.go).
func (s *meshStream) Drained(*ioloop.Conn) { s.l.p.t.writeGrants() }
