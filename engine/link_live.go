package engine

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// liveness is the heartbeat bookkeeping of the stream a link is watched
// by (a mesh's control stream, a star's one stream); only the heartbeat
// goroutine touches it. One check of the stream:
//
//	bytes read since the last check, or reading stalled -> silent = 0
//	otherwise silent++; == silentBeats*checksPerBeat    -> Abort(ErrNoHeartbeat)
//	                    > checksPerBeat+1               -> read the socket (Progress)
//	bytes written since the last check                  -> idle = 0
//	otherwise idle++; frames queued                     -> write them (Flush)
//	                  >= checksPerBeat, nothing queued  -> post a HEARTBEAT
//	                  == silentBeats*checksPerBeat, frames queued, the peer
//	                  must read (mustRead) and is not held -> Abort(ErrNotReading)
//
// The reads and writes are for a loaded process whose event loop is busy
// with another connection (it drains one until the socket is empty, which
// a fast sender can make last seconds): bytes the peer sent would wait
// unread, or this rank's frames unwritten, and a live peer look silent.
type liveness struct {
	read, written uint64      // socket byte counts at the last check
	silent, idle  int         // consecutive checks that found nothing read, nothing written
	heard         time.Time   // the check that last found bytes read (or reading stalled); zero before the first
	silenced      atomic.Bool // the link was dropped for silence (read by cause, on any goroutine)
	// mustRead: the peer must take what this rank writes, or be dropped
	// (a star coordinator's worker, whose unread frames hold back the
	// workers that send to it); unread: it was dropped for that.
	mustRead bool
	unread   atomic.Bool
}

// cause returns err, the end of one of the link's streams, or the silence
// the link was dropped for: aborting the watched stream, this rank may
// read the end of another stream (the peer, seeing the watched one end,
// ends the others) before its own abort reaches that one.
func (lv *liveness) cause(err error) error {
	switch {
	case lv.silenced.Load():
		return fmt.Errorf("%w (then: %v)", ErrNoHeartbeat, err)
	case lv.unread.Load():
		return fmt.Errorf("%w (then: %v)", ErrNotReading, err)
	}
	return err
}

// check is one check of p's stream c: it aborts c once nothing arrived
// from p at silentBeats*checksPerBeat checks in a row while this rank was
// reading it, and sends p a heartbeat once this rank wrote nothing to it
// at checksPerBeat checks in a row and nothing waits to be written. A
// peer that must read (mustRead) is dropped once this rank's frames for
// it waited unwritten for silentBeats*checksPerBeat checks. held says
// that this rank holds p's stream back on purpose (a coordinator whose
// forwarded frames from p wait to be written on): p may then be silent,
// or stop reading in turn, and is neither. Checks are counted
// rather than timed, so that a check the goroutine came to late (a loaded
// machine, this process stopped and resumed) delays a drop instead of
// causing one.
func (lv *liveness) check(p *peer, c *ioloop.Conn, held bool, now time.Time) {
	if c == nil || c.Err() != nil {
		return
	}
	if lv.heard.IsZero() {
		lv.heard = now
	}
	if read := c.BytesRead(); read != lv.read || held || lv.stalled(c) {
		lv.read, lv.silent, lv.heard = read, 0, now
	} else if lv.silent++; lv.silent >= silentBeats*checksPerBeat {
		p.t.opts.Logger.Warn("boltmesh: peer silent, dropping its connection", "rank", p.t.rank, "peer", p.rank, "silent", now.Sub(lv.heard).Round(time.Millisecond))
		// Noted first, so that the loss names the silence whatever the
		// streams report as they end (cause); then every stream, at once.
		lv.silenced.Store(true)
		c.Abort(ErrNoHeartbeat)
		p.link.abort(c, ErrNoHeartbeat)
		return
	} else if lv.silent > checksPerBeat+1 {
		// Longer than a live peer's heartbeats leave between them: what it
		// sent may wait unread while the loop is busy elsewhere.
		go c.Progress()
	}
	if written := c.BytesWritten(); written != lv.written {
		lv.written, lv.idle = written, 0
		return
	}
	lv.idle++
	if lv.mustRead && !held && c.Queued() > 0 && lv.idle >= silentBeats*checksPerBeat {
		p.t.opts.Logger.Warn("boltmesh: a worker read nothing of what waits for it; dropping its connection", "rank", p.t.rank, "peer", p.rank, "queued", c.Queued())
		lv.unread.Store(true) // first, as for silence
		c.Abort(ErrNotReading)
		p.link.abort(c, ErrNotReading)
		return
	}
	switch {
	case c.Queued() > 0:
		// No heartbeat: behind the queued frames it would tell the peer
		// nothing sooner, and their own bytes are the sign of life. They
		// wait for room in the socket, which the loop may be too busy to
		// see: write them here too.
		go c.Flush()
	case lv.idle >= checksPerBeat:
		h := frame.Header{Kind: frame.KindHeartbeat, Src: uint32(p.t.rank)}
		c.Post(&h, nil, false)
		lv.written, lv.idle = c.BytesWritten(), 0
	}
}

// stalled reports whether this rank stopped reading c while its peer may
// be live: a stream stopped because the peer does not read this rank's
// answers (ioloop.Options.MaxPosted) counts as live while they still move.
func (lv *liveness) stalled(c *ioloop.Conn) bool {
	return c.Stopped() && c.BytesWritten() != lv.written
}
