package engine

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// liveness is what a link knows of why it was dropped by the heartbeat
// goroutine, and whether its peer must read; each of its streams has a
// streamWatch of its own (a mesh's data streams and control stream, a
// star's one stream). One check of a stream:
//
//	bytes read since the last check, or reading held -> silent = 0
//	otherwise silent++; == silentBeats*checksPerBeat  -> Abort(ErrNoHeartbeat), naming the stream
//	                    > checksPerBeat+1             -> read the socket (Progress)
//	bytes written since the last check                -> idle = 0
//	otherwise idle++; frames queued                   -> write them (Flush)
//	                  >= checksPerBeat, nothing queued -> post a HEARTBEAT on the stream
//	                  == silentBeats*checksPerBeat, frames queued, the peer
//	                  must read (mustRead) and is not held -> Abort(ErrNotReading)
//
// Every stream is watched, not only the one that carries control frames:
// a stream that goes silent while the others live (a record an on-path
// relay left out of a sealed data stream, a NAT that expired one idle
// flow) would otherwise leave a receive waiting on it forever. Reading is
// held, and silence not counted, while this rank itself does not read
// the stream: a large eager SEND waits in it for its receive
// (ioloop.Conn.Deferred), a data stream's reading stopped at all (the
// peer, alive on the control stream, may be the one that leaves a
// payload unread, which backs this rank's frames up and stops its
// reading), a star's coordinator holds the peer back (streamLink), or
// the peer does not read this rank's answers on the control stream while
// they still move (streamWatch.stalled).
//
// The reads and writes are for a loaded process whose event loop is busy
// with another connection (it drains one until the socket is empty, which
// a fast sender can make last seconds): bytes the peer sent would wait
// unread, or this rank's frames unwritten, and a live peer look silent.
//
// Lock rule: the streamWatches belong to the heartbeat goroutine; silence
// and unread are set by it, fault by the link's lastWord on a failing
// stream's goroutine, and all are read by cause, on any goroutine.
type liveness struct {
	silence atomic.Pointer[SilenceError] // the link was dropped for this stream's silence
	fault   atomic.Pointer[error]        // or for this fault, found on one of its streams; set once, by lastWord, which it says was said
	// mustRead: the peer must take what this rank writes, or be dropped
	// (a star coordinator's worker, whose unread frames hold back the
	// workers that send to it); unread: it was dropped for that.
	mustRead bool
	unread   atomic.Bool
}

// streamWatch is what the heartbeat goroutine knows of one stream.
type streamWatch struct {
	read, written uint64    // the stream's byte counts at the last check
	silent, idle  int       // consecutive checks that found nothing read, nothing written
	heard         time.Time // the check that last found bytes read (or reading held); zero before the first
}

// cause returns err, the end of one of the link's streams, or the silence
// or fault the link was dropped for: aborting the stream it was found on,
// this rank may see the end of another stream (the peer, seeing the
// first end, ends the others; the last word's write on it fails) before
// its own abort reaches that one.
func (lv *liveness) cause(err error) error {
	switch s, f := lv.silence.Load(), lv.fault.Load(); {
	case s != nil && errors.Is(err, ErrNoHeartbeat):
		return s // the abort that silence made
	case s != nil:
		return fmt.Errorf("%w (then: %v)", s, err)
	case f != nil && !errors.Is(err, *f):
		return fmt.Errorf("%w (then: %v)", *f, err)
	case lv.unread.Load() && !errors.Is(err, ErrNotReading):
		return fmt.Errorf("%w (then: %v)", ErrNotReading, err)
	}
	return err
}

// check is one check of p's stream c, named name in errors, which w
// watches. It aborts the link once nothing arrived on c at
// silentBeats*checksPerBeat checks in a row while this rank was reading
// it, and sends p a heartbeat on c once this rank wrote nothing to it at
// checksPerBeat checks in a row and nothing waits to be written. A peer
// that must read (mustRead) is dropped once this rank's frames for it
// waited unwritten for silentBeats*checksPerBeat checks. held says that
// this rank does not read c on purpose (a deferred payload, a coordinator
// whose forwarded frames from p wait to be written on): p may then be
// silent there, or stop reading in turn, and is neither. Checks are
// counted rather than timed, so that a check the goroutine came to late
// (a loaded machine, this process stopped and resumed) delays a drop
// instead of causing one. It reports whether the link is still up.
func (lv *liveness) check(p *peer, c *ioloop.Conn, w *streamWatch, name string, held bool, now time.Time) bool {
	if c == nil || c.Err() != nil {
		return true
	}
	if w.heard.IsZero() {
		w.heard = now
	}
	if read := c.BytesRead(); read != w.read || held || w.stalled(c) {
		w.read, w.silent, w.heard = read, 0, now
	} else if w.silent++; w.silent >= silentBeats*checksPerBeat {
		// Noted first, so that the loss names the silence whatever the
		// streams report as they end (cause), and logs it; then every
		// stream, at once.
		lv.silence.Store(&SilenceError{Stream: name, Silent: now.Sub(w.heard).Round(time.Millisecond)})
		c.Abort(ErrNoHeartbeat)
		p.link.abort(c, ErrNoHeartbeat)
		return false
	} else if w.silent > checksPerBeat+1 {
		// Longer than a live peer's heartbeats leave between them: what it
		// sent may wait unread (an edge the loop missed); the loop looks.
		c.Wake()
	}
	if written := c.BytesWritten(); written != w.written {
		w.written, w.idle = written, 0
		return true
	}
	w.idle++
	if lv.mustRead && !held && c.Queued() > 0 && w.idle >= silentBeats*checksPerBeat {
		err := fmt.Errorf("%w (%d frames wait for it)", ErrNotReading, c.Queued())
		lv.unread.Store(true) // first, as for silence
		c.Abort(err)
		p.link.abort(c, err)
		return false
	}
	switch {
	case c.Queued() > 0:
		// No heartbeat: behind the queued frames it would tell the peer
		// nothing sooner, and their own bytes are the sign of life. They
		// wait for room in the socket, which the loop may have missed:
		// it writes them on this wake-up.
		c.Wake()
	case w.idle >= checksPerBeat:
		h := frame.Header{Kind: frame.KindHeartbeat, Src: uint32(p.t.rank)}
		c.Post(&h, nil, false)
		w.written, w.idle = c.BytesWritten(), 0
	}
	return true
}

// stalled reports whether this rank stopped reading c while its peer may
// be live: a stream stopped because the peer does not read this rank's
// answers (ioloop.Options.MaxPosted) counts as live while they still move.
func (w *streamWatch) stalled(c *ioloop.Conn) bool {
	return c.Stopped() && c.BytesWritten() != w.written
}

// silentBeats is how many KeepAlive periods of silence lose a peer.
const silentBeats = 4

// checksPerBeat is how many times per KeepAlive the heartbeat goroutine
// looks at each connection. Silence is counted in checks, and the byte
// that ends it is seen at the next check, so a peer is dropped between
// silentBeats and silentBeats+1/checksPerBeat periods after its last byte.
const checksPerBeat = 4

// startHeartbeat starts the goroutine that, checksPerBeat times per
// KeepAlive, checks every stream of every link (see liveness): one that
// wrote nothing for a KeepAlive sends a HEARTBEAT, and a link one of
// whose streams brought nothing for silentBeats*KeepAlive is aborted. A connection this rank
// stopped reading (see stalled) is exempt while it stays so: its peer's
// heartbeats wait unread in the socket. (TCP keepalive does not cover it
// either: the kernel sends no probe while data this rank sent, a
// heartbeat say, is unacknowledged, and a stopped peer's kernel answers
// probes.)
func (t *NetTransport) startHeartbeat() {
	t.beat.stop = make(chan struct{})
	t.beat.done = make(chan struct{})
	go t.beating()
}

// stopHeartbeat stops the heartbeat goroutine, if it runs, and waits for it.
func (t *NetTransport) stopHeartbeat() {
	if t.beat.stop != nil {
		close(t.beat.stop)
		<-t.beat.done
	}
}

func (t *NetTransport) beating() {
	defer close(t.beat.done)
	tick := time.NewTicker(max(t.opts.KeepAlive/checksPerBeat, 1))
	defer tick.Stop()
	for {
		select {
		case <-t.beat.stop:
			return
		case now := <-tick.C:
			for _, p := range t.view().Peers {
				if p.up() {
					p.link.checkLive(now) // a routed link has none of its own
				}
				p.warns.Flush(t.opts.Logger, now)
			}
		}
	}
}

// onHeartbeat is HEARTBEAT's arrive row (kinds.go): its bytes were the
// sign of life (link_live.go).
func (*peer) onHeartbeat(_ *ioloop.Conn, _ lane, _ *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
}
