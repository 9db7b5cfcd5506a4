package ioloop

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/own"
	"golang.org/x/sys/unix"
)

// maxIovecs caps the buffers passed to one writev (IOV_MAX is 1024).
const maxIovecs = 1024

// sendReq is one queued frame. It is owned by the sending goroutine until
// it is queued, by the queue until it completes, and is recycled by the
// sender after it receives from done.
type sendReq struct {
	hdr     [frame.HeaderSize]byte
	payload []byte
	done    chan error  // buffered 1: the completion
	off     int         // bytes of hdr+payload already written
	owned   *Buffer     // detached: payload is this copy
	async   bool        // nobody waits: the queue recycles it
	onDone  func(n int) // PostBuffer's callback, or nil
	cost    int64       // what it counts in writer.posted
}

// PostOverhead is what a frame that nobody waits for counts against
// Options.MaxPosted besides its copied payload: its queue entry.
const PostOverhead = 192

func (r *sendReq) size() int { return frame.HeaderSize + len(r.payload) }

// writer is the write side of a Conn: a FIFO of frames, written by whoever
// holds mu (a sender, or the loop when the socket becomes writable again).
type writer struct {
	own    own.Owned   // owned while writing the socket; asked: frames were queued while it was owned
	wanted atomic.Bool // a flush is under way: the queue is to be written out

	qmu    sync.Mutex // guards the fields below
	queue  []*sendReq // frames not yet completely written, in order
	head   int        // queue[head:] is live
	inUse  int        // frames of the live queue handed to the current writev
	free   []*sendReq // recycled requests
	failed error

	hdr     [frame.HeaderSize]byte // sendDirect's header, the side's owner's
	bufs    [][]byte               // the writev vector, reused
	total   atomic.Uint64          // bytes written so far
	nqueued atomic.Int64           // frames in the queue, for Poll's cheap check
	posted  atomic.Int64           // cost of the async frames queued (Options.MaxPosted)
}

// Send writes one frame: h's header followed by payload, which the loop
// does not copy. It returns once every byte is in the kernel, or taken
// by a Buffering stream (payload may then be reused), or with the
// connection's *ConnError. Frames from
// concurrent Sends are never interleaved; frames queued while another Send
// writes are coalesced into its writev. h.Length is set to len(payload).
func (c *Conn) Send(h *frame.Header, payload []byte) error {
	return c.SendCancel(h, payload, nil)
}

// SendCancel is Send that stops waiting when cancel is closed. If no byte
// of the frame has reached the kernel yet, the frame is dropped and
// SendCancel returns ErrCanceled. Otherwise the frame is committed: the
// stream must stay intact, so the unwritten rest of the payload is copied
// into a pooled buffer, written in the background, and SendCancel returns
// nil; payload may be reused either way.
func (c *Conn) SendCancel(h *frame.Header, payload []byte, cancel <-chan struct{}) error {
	h.Length = uint64(len(payload))
	r, done, err := c.sendDirect(h, payload, false, false)
	if done {
		return err
	}
	if r == nil {
		if r, err = c.enqueue(h, payload, 0, false, false); err != nil {
			return err
		}
	}
	c.flush()
	if spin := c.loop.spinFor(); spin > 0 && len(r.done) == 0 {
		c.spinWrite(r, spin)
	}
	select {
	case err = <-r.done:
	default:
		var detached bool
		if err, detached = c.await(r, cancel); detached {
			return nil // the queue owns r now
		}
	}
	c.recycle(r)
	return err
}

// spinWrite retries the write itself until r completes or no byte of the
// queue has moved for spin: a receiver that drains the socket at wire speed
// frees room within microseconds, and taking the loop's wake-up out of that
// path is what keeps a bulk sender at wire speed.
func (c *Conn) spinWrite(r *sendReq, spin time.Duration) {
	if p := c.poller; p != nil {
		// No wake-up for room while this sender looks itself; the last to
		// stop writes once more, which asks for one if there is still none.
		p.Writing(true)
		defer func() {
			if p.Writing(false) {
				c.flush()
			}
		}()
	}
	last, seen := time.Now(), c.wr.total.Load()
	for len(r.done) == 0 && c.failed.Load() == nil {
		runtime.Gosched()
		if c.poller != nil {
			// The other side may be a writer waiting for this side to read
			// (both ends of an exchange): a pipe's ring, unlike a socket,
			// holds less than a large frame, so read while waiting for room.
			c.progress(true)
		}
		c.flush()
		if now := c.wr.total.Load(); now != seen {
			last, seen = time.Now(), now
		} else if time.Since(last) > spin {
			return
		}
	}
}

// await waits for r or cancel; detached reports that r was handed over to
// the queue and must not be recycled by the sender.
func (c *Conn) await(r *sendReq, cancel <-chan struct{}) (err error, detached bool) {
	select {
	case err := <-r.done:
		return err, false
	case <-cancel:
	}
	if c.unqueue(r) {
		return ErrCanceled, false
	}
	if c.detach(r) {
		return nil, true
	}
	return <-r.done, false
}

// detach gives a started frame its own copy of the payload (all of it: the
// written part is simply skipped, as r.off says) so that the
// sender may return; the queue recycles it when it completes. It reports
// false if the frame completed (or failed) first. It owns the write side
// meanwhile, waiting for it, and serves what was asked then.
func (c *Conn) detach(r *sendReq) (detached bool) {
	w := &c.wr
	w.own.Lock() // no writev is using r.payload while we own it
	w.qmu.Lock()
	if len(r.done) == 0 && w.queued(r) {
		r.owned = GetBuffer(len(r.payload))
		copy(r.owned.B, r.payload)
		r.payload = r.owned.B
		detached = true
	}
	w.qmu.Unlock()
	if w.own.Release() || detached {
		c.flush() // what was asked while detach owned the side, or the detached frame's rest
	}
	return detached
}

// queued reports whether r is in the live queue; qmu must be held.
func (w *writer) queued(r *sendReq) bool {
	for _, q := range w.queue[w.head:] {
		if q == r {
			return true
		}
	}
	return false
}

// finish completes r: its sender is told, or, for a detached frame, the
// copy and the request are recycled. qmu must be held.
func (w *writer) finish(r *sendReq, err error) {
	if r.owned == nil && !r.async {
		r.done <- err
		return
	}
	if r.owned != nil {
		PutBuffer(r.owned)
	}
	if r.onDone != nil {
		r.onDone(len(r.payload))
	}
	if r.cost != 0 {
		w.posted.Add(-r.cost)
	}
	r.owned, r.payload, r.async, r.onDone, r.cost = nil, nil, false, nil, 0
	w.keep(r)
}

// keepFree and keepQueue bound what a writer keeps for reuse once a
// backlog is written: recycled requests, and the queue's room. A peer
// that once made thousands of frames wait (a star coordinator's worker
// that read slowly) must not leave their room held for good.
const (
	keepFree  = 256
	keepQueue = 4096
)

// keep keeps r for reuse, up to keepFree requests. qmu must be held.
func (w *writer) keep(r *sendReq) {
	if len(w.free) < keepFree {
		w.free = append(w.free, r)
	}
}

// sendDirect is the fast path: when nothing is queued and no goroutine is
// writing, the frame goes out with one writev from the caller, with no
// queueing and no completion signal. It reports done with the outcome; or,
// when the socket took only part of the frame, the queued request for the
// rest (at the head of the queue); or neither, when the frame must take the
// queue like any other.
func (c *Conn) sendDirect(h *frame.Header, payload []byte, async, copyPayload bool) (r *sendReq, done bool, err error) {
	w := &c.wr
	if !w.own.Acquire() {
		return nil, false, nil
	}
	// The queue's count and the failure without qmu: with mu held, no
	// frame of the queue is half written but as count shows, and frames
	// queued meanwhile by others are concurrent with this one (and
	// written by unlockWriter); failQueued sets w.failed after c.failed.
	idle := w.nqueued.Load() == 0 && c.failed.Load() == nil && !c.closed
	if !idle {
		c.unlockWriter()
		return nil, false, nil
	}
	h.Encode(&w.hdr)
	w.bufs = append(w.bufs[:0], w.hdr[:])
	if len(payload) > 0 {
		w.bufs = append(w.bufs, payload)
	}
	n, err := c.writev()
	switch {
	case err == nil && n == frame.HeaderSize+len(payload):
		w.total.Add(uint64(n))
		c.holdOn()
		c.unlockWriter()
		return nil, true, nil
	case err == nil || err == unix.EAGAIN || err == unix.EINTR:
		n = max(n, 0)
		w.total.Add(uint64(n))
		r, err = c.enqueue(h, payload, n, async, copyPayload)
		c.unlockWriter()
		return r, err != nil, err
	default:
		c.unlockWriter()
		c.fail("writev", os.NewSyscallError("writev", err))
		return nil, true, c.Err()
	}
}

// holdOn has a flush follow a direct write whose bytes a Buffering
// stream holds in part: wanted before that flush tries, so that room
// freed after it resumes it. The write side is owned.
func (c *Conn) holdOn() {
	if c.holder != nil && c.holder.Buffered() {
		c.wr.wanted.Store(true)
		c.wr.own.Ask() // unlockWriter flushes
	}
}

// unlockWriter releases the write side and, as every owner must, writes
// what was queued meanwhile: a flush that found the side owned left that
// to us.
func (c *Conn) unlockWriter() {
	if c.wr.own.Release() {
		c.flush()
	}
}

// enqueue queues a frame of which off bytes are already written: such a
// frame goes first, the others last. An async frame is recycled by the
// queue when written (its payload copied first if copyPayload).
func (c *Conn) enqueue(h *frame.Header, payload []byte, off int, async, copyPayload bool) (*sendReq, error) {
	return c.enqueueOwned(h, payload, off, async, copyPayload, nil, nil)
}

// enqueueOwned is enqueue for an async frame whose payload is bb's, which
// the queue takes over with done, as it queues the frame (PostBuffer):
// bb is returned to the pool, and done called, once the frame is written
// or has failed.
func (c *Conn) enqueueOwned(h *frame.Header, payload []byte, off int, async, copyPayload bool, bb *Buffer, done func(n int)) (*sendReq, error) {
	w := &c.wr
	w.qmu.Lock()
	defer w.qmu.Unlock()
	if w.failed != nil {
		return nil, w.failed
	}
	var r *sendReq
	if n := len(w.free); n > 0 {
		r, w.free = w.free[n-1], w.free[:n-1]
	} else {
		r = &sendReq{done: make(chan error, 1)}
	}
	h.Encode(&r.hdr)
	r.payload, r.off, r.async = payload, off, async
	if copyPayload && len(payload) > 0 {
		r.owned = GetBuffer(len(payload))
		copy(r.owned.B, payload)
		r.payload = r.owned.B
	}
	if async {
		r.cost = PostOverhead
		if r.owned != nil {
			r.cost += int64(cap(r.owned.B))
		}
		if lim := c.loop.opts.MaxPosted; w.posted.Add(r.cost) > lim && lim > 0 {
			c.rd.held4out.Store(true)
		}
	}
	if bb != nil {
		r.owned, r.onDone = bb, done
	}
	if w.head > 0 && w.head >= len(w.queue)/2 {
		n := copy(w.queue, w.queue[w.head:])
		clear(w.queue[n:])
		w.queue, w.head = w.queue[:n], 0
	}
	w.queue = append(w.queue, r)
	if off > 0 { // started: move it to the front
		copy(w.queue[w.head+1:], w.queue[w.head:len(w.queue)-1])
		w.queue[w.head] = r
	}
	w.count()
	return r, nil
}

// unqueue removes r if no byte of it was handed to writev.
func (c *Conn) unqueue(r *sendReq) bool {
	w := &c.wr
	w.qmu.Lock()
	defer w.qmu.Unlock()
	for i := w.head + w.inUse; i < len(w.queue); i++ {
		if w.queue[i] == r && r.off == 0 {
			copy(w.queue[i:], w.queue[i+1:])
			w.queue[len(w.queue)-1] = nil
			w.queue = w.queue[:len(w.queue)-1]
			w.count()
			return true
		}
	}
	return false
}

func (c *Conn) recycle(r *sendReq) {
	r.payload = nil
	w := &c.wr
	w.qmu.Lock()
	w.keep(r)
	w.qmu.Unlock()
}

// onWritable resumes, when the loop sees the socket writable, a flush that
// a full socket stopped.
func (c *Conn) onWritable() {
	if !c.wr.wanted.Load() {
		return // only queued frames (Queue), which wait for a flush
	}
	c.flush()
}

// flush asks for the queued frames to be written, and writes them until
// the queue is empty or the socket is full, unless another goroutine owns
// the write side: that one writes them before it lets go. A full socket
// is resumed by the loop once it is writable. Every round marks the
// flush wanted, since whoever asked wanted one; only an empty queue ends
// it (flushLocked), so that a socket full before the queue is written out
// always resumes it, while the frames that Queue adds afterwards wait for
// the next flush.
func (c *Conn) flush() {
	c.wr.own.Ask()
	for c.wr.own.Acquire() {
		c.wr.own.Claim()
		c.wr.wanted.Store(true)
		err := c.flushLocked()
		again := c.wr.own.Release()
		if err != nil {
			c.fail("writev", err)
			return
		}
		c.releaseOutHold()
		if !again {
			return
		}
	}
}

// releaseOutHold resumes reading once the frames that nobody waits for
// are below half of Options.MaxPosted again.
func (c *Conn) releaseOutHold() {
	if c.rd.held4out.Load() && c.wr.posted.Load() <= c.loop.opts.MaxPosted/2 && c.rd.held4out.CompareAndSwap(true, false) {
		c.rd.own.Ask()
		c.Progress() // from inside a handler, the reader sees the ask as it lets go
	}
}

// flushLocked writes with writev until the queue is empty or EAGAIN.
func (c *Conn) flushLocked() error {
	if c.closed {
		return nil
	}
	for {
		if c.gather() == 0 {
			if c.holder != nil && c.holder.Buffered() {
				if err := c.holder.Flush(); err != nil {
					return os.NewSyscallError("writev", err)
				}
				if c.holder.Buffered() {
					return nil // wanted stays: room resumes the flush
				}
			}
			c.wr.wanted.Store(false)
			return nil
		}
		n, err := c.writev()
		switch err {
		case nil:
			c.wr.total.Add(uint64(n))
			c.advance(n)
		case unix.EINTR:
			c.advance(0)
		case unix.EAGAIN:
			c.advance(0)
			return nil
		default:
			c.advance(0)
			return os.NewSyscallError("writev", err)
		}
	}
}

// writev writes wr.bufs with one Writev of the Stream and clears it; the
// write side is owned.
func (c *Conn) writev() (int, error) {
	w := &c.wr
	n, err := c.s.Writev(w.bufs)
	if testHookWritev != nil {
		testHookWritev(c.id, len(w.bufs), n)
	}
	clear(w.bufs)
	return n, err
}

// testHookWritev, when set by a test, sees every writev: the connection
// id, the number of buffers and the bytes written.
var testHookWritev func(id, bufs, n int)

// gather fills the writev vector from the live queue and marks those
// frames in use; it returns how many frames it took.
func (c *Conn) gather() int {
	w := &c.wr
	w.qmu.Lock()
	defer w.qmu.Unlock()
	w.bufs = w.bufs[:0]
	k := 0
	for _, r := range w.queue[w.head:] {
		if len(w.bufs)+2 > maxIovecs {
			break
		}
		w.bufs = appendUnwritten(w.bufs, r)
		k++
	}
	w.inUse = k
	return k
}

// appendUnwritten appends the parts of r not yet written.
func appendUnwritten(bufs [][]byte, r *sendReq) [][]byte {
	if r.off < frame.HeaderSize {
		bufs = append(bufs, r.hdr[r.off:])
		if len(r.payload) > 0 {
			bufs = append(bufs, r.payload)
		}
		return bufs
	}
	return append(bufs, r.payload[r.off-frame.HeaderSize:])
}

// advance accounts n written bytes: frames written whole complete.
func (c *Conn) advance(n int) {
	w := &c.wr
	w.qmu.Lock()
	defer w.qmu.Unlock()
	w.inUse = 0
	for w.head < len(w.queue) {
		r := w.queue[w.head]
		left := r.size() - r.off
		if n < left {
			r.off += n
			break
		}
		n -= left
		w.queue[w.head] = nil
		w.head++
		w.finish(r, nil)
	}
	if w.head == len(w.queue) { // all written: start again at the front, in room kept small
		w.queue, w.head = w.queue[:0], 0
		if cap(w.queue) > keepQueue {
			w.queue = nil
		}
	}
	w.count()
	if w.failed != nil { // frames failQueued left to this writev
		w.failRest()
	}
}

// failQueued fails every queued frame and every later Send with e. Frames
// handed to a writev in progress are left to it: advance completes those
// it wrote and fails the rest, so that a frame that reached the kernel is
// never reported as failed.
func (c *Conn) failQueued(e *ConnError) {
	w := &c.wr
	w.qmu.Lock()
	defer w.qmu.Unlock()
	w.failed = e
	keep := w.head + w.inUse
	for _, r := range w.queue[keep:] {
		w.finish(r, e)
	}
	clear(w.queue[keep:])
	w.queue = w.queue[:keep]
	w.count()
	if w.inUse == 0 {
		w.failRest()
	}
}

// failRest fails what is left in the queue with w.failed; qmu must be held.
func (w *writer) failRest() {
	for _, r := range w.queue[w.head:] {
		w.finish(r, w.failed)
	}
	clear(w.queue)
	w.queue, w.head, w.inUse = w.queue[:0], 0, 0
	w.count()
}

// count publishes the number of queued frames; qmu must be held.
func (w *writer) count() { w.nqueued.Store(int64(len(w.queue) - w.head)) }
