package ioloop

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/own"
	"golang.org/x/sys/unix"
)

// reader is the read side of a Conn: a staging buffer for headers and small
// payloads, and the frame being received.
type reader struct {
	own      own.Owned     // owned by whoever reads the socket, who calls releaseIfDue once it lets go; asked: readiness came while it was owned
	paused   atomic.Bool   // the handler asked to stop reading
	held4out atomic.Bool   // stopped: too much posted waits to be written (Options.MaxPosted)
	deferred atomic.Bool   // stopped: the handler deferred the held frame's payload (Defer)
	total    atomic.Uint64 // bytes read from the socket so far
	polledAt atomic.Int64  // nanotime of the last Poll by a waiting goroutine

	buf  []byte // staging; unread bytes are buf[r:w]
	r, w int

	held        bool // hdr decoded, waiting for the handler to name a destination
	deferNext   bool // set by Defer during Payload
	discardNext bool // set by Discard during Payload
	partsNext   int  // set by InParts during Payload
	discarding  bool // the payload is read and dropped
	inBody      bool
	hdr         frame.Header
	dst         []byte // payload destination, len == hdr.Length
	got         int    // payload bytes in dst
	part        int    // the payload is read in parts of this many bytes (InParts), or 0
	partOff     uint64 // where dst's part starts in the payload
	bb          *Buffer
	short       bool // the last read hit EAGAIN (or, when lazy, came back short)
	lazy        bool // this drain may end at a short read (Poll)
}

// Progress reads whatever the socket holds and delivers every complete
// frame to the handler, without blocking. A goroutine waiting for a frame
// may call it in a loop to receive without a hand-off from the loop
// goroutine. If another goroutine is reading, Progress returns at once and
// that goroutine will read what arrived.
func (c *Conn) Progress() { c.progress(false) }

// Poll is Progress for a goroutine that waits for a frame: it may stop at
// a read that returned less than asked instead of reading on until EAGAIN,
// which saves a system call per message on the waiter's path. That is safe
// because every arrival also raises an edge for the loop, whose drains
// (and every drain on its behalf) still go on until EAGAIN: a short read
// does not prove the socket empty, so only the loop's drain may end the
// obligation an edge creates.
//
// Poll also writes what is queued for the connection: a goroutine waiting
// for a reply while its own large frame is still going out (both sides of
// a collective exchange) moves both directions without a loop wake-up.
func (c *Conn) Poll() {
	if !c.loopedOn() {
		c.rd.polledAt.Store(nanotime())
	}
	c.progress(true)
	if c.wr.nqueued.Load() > 0 {
		c.flush()
	}
}

// polledRecently reports whether a goroutine other than the loop read
// this connection in the last few microseconds: it is spinning on it, so
// the loop need not.
func (c *Conn) polledRecently() bool {
	return c.loopedOn() || nanotime()-c.rd.polledAt.Load() < int64(10*time.Microsecond)
}

// loopedOn reports whether a goroutine polls this Conn in a loop
// (Polling, on a Poller stream): it needs no clock read per Poll to say
// so.
func (c *Conn) loopedOn() bool { return c.poller != nil && c.poller.Pollers() > 0 }

// progress drains the socket if no other goroutine is reading it (owns
// the read side, internal/own), and reports whether it did. Like every owner
// of the read side, it calls releaseIfDue once it lets go, also when its
// drain failed: a fail that ran meanwhile could not own the side and
// left the release to it, and its own fail is then a no-op.
//
// A drain that claims an ask serves the edge the loop could not: it is
// strict even if it was asked to be lazy, since the edge that asked is
// spent (and a pipe's writer rings no second bell until this side asks
// for one, which only a strict drain does). Claiming and deciding are one
// step: a lazy drain that cleared the ask first would leave the bytes
// behind that edge unread, with nobody to read them. (An ask after the
// claim is seen as the side is released, and served by a strict retry.)
func (c *Conn) progress(lazy bool) (read bool) {
	for c.rd.own.Acquire() {
		read = true
		if testHookLocked != nil {
			testHookLocked(c.id)
		}
		served := c.rd.own.Claim()
		c.rd.lazy = lazy && !served
		lazy = false // a retry serves an edge the loop could not: strict
		before := c.rd.total.Load()
		op, err := c.drainLocked()
		again := c.rd.own.Release()
		if err != nil {
			c.fail(op, err)
		}
		c.releaseIfDue()
		if c.drainer != nil && (err != nil || c.rd.total.Load() != before) {
			c.drainer.Drained(c)
		}
		if err != nil || !again {
			return read
		}
	}
	return read
}

// ReadArrived is Progress for a caller that must have what has arrived
// read before it goes on (a handler deciding why its peer ended another
// connection, whose last frames may be waiting here): if another
// goroutine is reading c, it waits for that one to finish, for at most
// within, rather than leave the bytes to it.
func (c *Conn) ReadArrived(within time.Duration) {
	c.rd.own.Ask() // strict: up to EAGAIN, by whoever reads next
	for end := time.Now().Add(within); !c.progress(false) && time.Now().Before(end); {
		runtime.Gosched()
	}
}

// BytesRead returns how many bytes have been read from the socket so far;
// a waiting goroutine can tell from it whether data is still arriving.
func (c *Conn) BytesRead() uint64 { return c.rd.total.Load() }

// onBell is what the loop does when a Belled stream's descriptor is
// ready: it drains it, and then drives both directions.
func (c *Conn) onBell() {
	if err := c.bell.Rang(); err != nil {
		c.fail("read", err)
		return
	}
	c.onWritable()
	c.onReadable()
}

func (c *Conn) onReadable() {
	c.rd.own.Ask()
	c.Progress()
}

// Look has c read what its Stream holds now, or its current reader will:
// for a Stream that learns of bytes its descriptor will not report (a
// Poller that has just asked to be told).
func (c *Conn) Look() { c.onReadable() }

// Pause stops reading from the socket after the frame being delivered, so
// that TCP flow control holds the peer back. Call it from Handler.Deliver
// when too much has queued up.
func (c *Conn) Pause() { c.rd.paused.Store(true) }

// Stopped reports whether reading is stopped, by Pause or because what
// was posted waits to be written (Options.MaxPosted). (A deferred payload
// does not count.)
func (c *Conn) Stopped() bool { return c.rd.paused.Load() || c.rd.held4out.Load() }

// Resume undoes Pause, retries a frame whose payload the handler
// deferred, and reads what has arrived since.
func (c *Conn) Resume() {
	c.Unpause()
	c.rd.own.Ask()
	c.Progress()
}

// Unpause undoes Pause without reading: for a caller that decides under
// a lock of its own (which a handler of c may take) whether c is paused;
// it has c read (Look) once it holds the lock no more, and a Pause in
// between holds, since reading stops at a pause.
func (c *Conn) Unpause() { c.rd.paused.Store(false) }

// Deferred reports whether reading waits for the handler: it deferred the
// payload of the frame it was last asked about (Defer) and has not had
// it asked for again since (Resume).
func (c *Conn) Deferred() bool { return c.rd.deferred.Load() }

// Defer, called from Handler.Payload instead of naming a buffer, leaves the
// frame's payload in the socket: reading stops until Resume, which asks
// Payload again. A handler defers a large payload that nobody waits for
// yet, so that it can later be read straight into the buffer of the
// receive that wants it; whatever the peer sends behind it waits, so only
// a stream that carries nothing else that is needed may defer.
func (c *Conn) Defer() { c.rd.deferNext = true }

// Discard, called from Handler.Payload instead of naming a buffer, has the
// frame's payload read and dropped, through the staging buffer, so that a
// payload the handler refuses (a PUT outside the heap, a reply nobody
// waits for) costs no memory however long it is. Deliver is then called
// with a nil payload and a nil buffer.
func (c *Conn) Discard() { c.rd.discardNext = true }

// Discarding reports whether the Payload call in progress has called
// Discard: for a handler that names the payload's destination through
// another's code and must know which way it went.
func (c *Conn) Discarding() bool { return c.rd.discardNext }

// InParts, called from Handler.Payload instead of naming a buffer, has
// the frame's payload read in parts of at most n bytes (n > 0), each into
// a pooled buffer handed to the handler's DeliverPart as soon as it is
// whole, so that a long payload never sits whole in memory: a relay
// passes each part on as it comes. Deliver is not called for the frame.
// A payload of at most n bytes, or a handler that is not a PartHandler,
// is read whole as if Payload had returned nil. Pause, called from
// DeliverPart, stops reading after that part.
func (c *Conn) InParts(n int) { c.rd.partsNext = n }

// drainLocked delivers frames until the socket is drained, the handler
// pauses reading, or the connection breaks.
func (c *Conn) drainLocked() (string, error) {
	rd := &c.rd
	if c.closed {
		return "", nil
	}
	rd.short = false
	for !rd.paused.Load() && !rd.held4out.Load() && c.failed.Load() == nil {
		if rd.held {
			if !c.choose() {
				return "", nil
			}
			continue
		}
		if rd.inBody {
			done, err := c.fillBody()
			if err != nil || !done {
				return "read", err
			}
			c.deliver()
			continue
		}
		if rd.w-rd.r >= frame.HeaderSize {
			if err := c.startFrame(); err != nil {
				return "decode", err
			}
			continue
		}
		if rd.short {
			return "", nil
		}
		if err := c.fill(); err != nil {
			return "read", err
		}
	}
	return "", nil
}

// startFrame decodes the header at rd.r; choose then picks the payload's
// destination.
func (c *Conn) startFrame() error {
	rd := &c.rd
	h, err := frame.Decode(rd.buf[rd.r:rd.w], c.loop.opts.MaxFrame)
	if err != nil {
		return protocolError{err}
	}
	rd.r += frame.HeaderSize
	rd.hdr = h
	rd.held = true
	return nil
}

// choose asks the handler where the held frame's payload goes and reports
// false if the handler deferred it or ended the connection. A handler that
// refuses a frame on its header and drops the peer (Abort, Close) has
// nothing more read: no buffer is taken for the payload, however long the
// header says it is.
func (c *Conn) choose() bool {
	rd := &c.rd
	rd.discardNext, rd.deferNext, rd.partsNext = false, false, 0
	dst := c.h.Payload(c, &rd.hdr)
	if c.failed.Load() != nil || dst == nil && rd.deferNext {
		rd.deferred.Store(rd.deferNext)
		return false
	}
	if rd.deferred.Load() {
		rd.deferred.Store(false)
	}
	rd.held, rd.inBody, rd.got, rd.dst = false, true, 0, dst
	rd.discarding = dst == nil && rd.discardNext
	rd.part, rd.partOff = 0, 0
	if rd.partsNext > 0 && uint64(rd.partsNext) < rd.hdr.Length && dst == nil && !rd.discarding && c.parts() {
		rd.part = rd.partsNext
		rd.bb = GetBuffer(rd.part)
		rd.dst = rd.bb.B
	} else if !rd.discarding && (dst == nil || uint64(len(dst)) != rd.hdr.Length) {
		rd.bb = GetBuffer(int(rd.hdr.Length))
		rd.dst = rd.bb.B
	}
	return true
}

// fillBody moves staged bytes into the payload destination and reads the
// rest, directly when it is large. It reports whether the payload is whole.
func (c *Conn) fillBody() (bool, error) {
	rd := &c.rd
	if rd.discarding {
		return c.skipBody()
	}
	for {
		if rd.w > rd.r {
			n := copy(rd.dst[rd.got:], rd.buf[rd.r:rd.w])
			rd.r += n
			rd.got += n
		}
		need := len(rd.dst) - rd.got
		if need == 0 {
			return true, nil
		}
		if rd.short {
			return false, nil
		}
		if need < c.loop.opts.DirectRead {
			if err := c.fill(); err != nil {
				return false, err
			}
			continue
		}
		n, err := c.read(rd.dst[rd.got:])
		if err != nil {
			return false, err
		}
		rd.got += n
	}
}

// skipBody drops the payload being discarded as it arrives, through the
// staging buffer. It reports whether all of it is gone.
func (c *Conn) skipBody() (bool, error) {
	rd := &c.rd
	for {
		n := min(uint64(rd.w-rd.r), rd.hdr.Length-uint64(rd.got))
		rd.r += int(n)
		rd.got += int(n)
		if uint64(rd.got) == rd.hdr.Length {
			return true, nil
		}
		if rd.short {
			return false, nil
		}
		if err := c.fill(); err != nil {
			return false, err
		}
	}
}

// fill reads into the staging buffer after the unread bytes.
func (c *Conn) fill() error {
	rd := &c.rd
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	} else if len(rd.buf)-rd.w < frame.HeaderSize {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	n, err := c.read(rd.buf[rd.w:])
	rd.w += n
	return err
}

// read does one read(2) and notes EAGAIN, which means the socket is
// drained and the poller will report new data.
func (c *Conn) read(p []byte) (int, error) {
	if testHookRead != nil {
		testHookRead(c.id)
	}
	for {
		n, err := c.read1(p)
		switch {
		case err == nil && n > 0: // first: errors compare as interfaces
		case err == unix.EAGAIN:
			c.rd.short = true
			return 0, nil
		case err == unix.EINTR:
			continue
		case err == ErrEOF || err == nil:
			return 0, ErrEOF
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		}
		// A short read does not prove the socket drained: Linux may return
		// early from a large read with data still queued, and no new edge
		// comes for that data. Only EAGAIN ends a strict drain.
		c.rd.short = c.rd.lazy && n < len(p)
		c.rd.total.Add(uint64(n))
		return n, nil
	}
}

// read1 is one read of the Stream, which may ask to be told of what
// comes next on a drain that must end only when nothing is left (not
// Poll's; see Stream.Read).
func (c *Conn) read1(p []byte) (int, error) { return c.s.Read(p, !c.rd.lazy) }

// Polling tells the connection that a goroutine starts (on) or stops
// polling it in a loop (Poll). A Poller stream (a pipe) asks for no
// wake-up while one does, so that its writer makes no system call per
// frame for a reader that is looking anyway; the last to stop asks for
// one again and reads what came meanwhile, if anything did (a goroutine
// that polls again soon stops with Polled instead). Other streams (a
// socket) need neither: Polling does nothing.
func (c *Conn) Polling(on bool) {
	switch {
	case c.poller == nil:
	case on:
		c.poller.StartPolling()
	case c.poller.StopPolling():
		c.onReadable()
	}
}

// Polled is Polling(false) for a goroutine that got what it polled for
// and is likely to poll again soon: a Poller stream may put off asking
// for a wake-up (a pipe asks only once nobody has polled it for a
// moment). On other streams it does nothing.
func (c *Conn) Polled() {
	if c.poller != nil {
		c.poller.StopPolled()
	}
}

// testHookLocked, when set by a test, runs as progress takes the read
// side, before it claims what was asked: the connection id.
var testHookLocked func(id int)

// testHookRead, when set by a test, runs before every read of the socket,
// with the read side locked: the connection id.
var testHookRead func(id int)

// deliver hands the finished frame to the handler and resets the state.
func (c *Conn) deliver() {
	rd := &c.rd
	if rd.part > 0 {
		c.deliverPart()
		return
	}
	payload, bb := rd.dst, rd.bb
	rd.inBody, rd.dst, rd.bb, rd.discarding = false, nil, nil, false
	c.h.Deliver(c, &rd.hdr, payload, bb)
}

// parts reports whether the handler takes payloads in parts.
func (c *Conn) parts() bool {
	_, ok := c.h.(PartHandler)
	return ok
}

// deliverPart hands the part just read to the handler, and readies the
// next part's buffer, or ends the frame with its last part.
func (c *Conn) deliverPart() {
	rd := &c.rd
	off, bb := rd.partOff, rd.bb
	rd.partOff += uint64(len(bb.B))
	if left := rd.hdr.Length - rd.partOff; left > 0 {
		rd.bb = GetBuffer(int(min(left, uint64(rd.part))))
		rd.dst, rd.got = rd.bb.B, 0
	} else {
		rd.inBody, rd.dst, rd.bb, rd.part = false, nil, nil, 0
	}
	c.h.(PartHandler).DeliverPart(c, &rd.hdr, off, bb)
}
