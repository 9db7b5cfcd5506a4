package engine

import (
	"time"

	"github.com/boltmesh/boltmesh/frame"
)

// silentBeats is how many KeepAlive periods of silence lose a peer.
const silentBeats = 4

// checksPerBeat is how many times per KeepAlive the heartbeat goroutine
// looks at each connection. Silence is counted in checks, and the byte
// that ends it is seen at the next check, so a peer is dropped between
// silentBeats and silentBeats+1/checksPerBeat periods after its last byte.
const checksPerBeat = 4

// liveness is one connection's heartbeat bookkeeping; only the heartbeat
// goroutine touches it. One check of a connection:
//
//	bytes read since the last check, or reading stalled -> silent = 0
//	otherwise silent++; == silentBeats*checksPerBeat    -> Abort(ErrNoHeartbeat)
//	                    > checksPerBeat+1               -> read the socket (Progress)
//	bytes written since the last check                  -> idle = 0
//	otherwise idle++; frames queued                     -> write them (Flush)
//	                  >= checksPerBeat, nothing queued  -> post a HEARTBEAT
//
// The reads and writes are for a loaded process whose event loop is busy
// with another connection (it drains one until the socket is empty, which
// a fast sender can make last seconds): bytes the peer sent would wait
// unread, or this rank's frames unwritten, and a live peer look silent.
type liveness struct {
	read, written uint64    // socket byte counts at the last check
	silent, idle  int       // consecutive checks that found nothing read, nothing written
	heard         time.Time // the check that last found bytes read (or reading stalled)
}

// startHeartbeat starts the goroutine that, checksPerBeat times per
// KeepAlive, checks every connection (see liveness): one that wrote
// nothing for a KeepAlive sends a HEARTBEAT, and one from which nothing
// arrived for silentBeats*KeepAlive is aborted. A connection this rank
// stopped reading (see stalled) is exempt while it stays so: its peer's
// heartbeats wait unread in the socket. (TCP keepalive does not cover it
// either: the kernel sends no probe while data this rank sent, a
// heartbeat say, is unacknowledged, and a stopped peer's kernel answers
// probes.)
func (t *NetTransport) startHeartbeat() {
	t.beatStop = make(chan struct{})
	t.beatDone = make(chan struct{})
	now := time.Now()
	for _, p := range t.peers {
		p.live.heard = now
	}
	go t.beat()
}

// stopHeartbeat stops the heartbeat goroutine, if it runs, and waits for it.
func (t *NetTransport) stopHeartbeat() {
	if t.beatStop != nil {
		close(t.beatStop)
		<-t.beatDone
	}
}

func (t *NetTransport) beat() {
	defer close(t.beatDone)
	tick := time.NewTicker(max(t.opts.KeepAlive/checksPerBeat, 1))
	defer tick.Stop()
	for {
		select {
		case <-t.beatStop:
			return
		case now := <-tick.C:
			for _, p := range t.peers {
				if p.conn != nil && p.via == 0 { // each connection once (a star worker's peers share one)
					p.checkLive(now)
				}
			}
		}
	}
}

// checkLive is one check of p's connection: it aborts the connection once
// nothing arrived from p at silentBeats*checksPerBeat checks in a row while
// this rank was reading it, and sends p a heartbeat once this rank wrote
// nothing to it at checksPerBeat checks in a row and nothing waits to be
// written. Checks are counted rather than timed, so that a check the
// goroutine came to late (a loaded machine, this process stopped and
// resumed) delays a drop instead of causing one.
func (p *peer) checkLive(now time.Time) {
	c, lv := p.ctlConn(), &p.live
	if c.Err() != nil {
		return
	}
	if read := c.BytesRead(); read != lv.read || p.stalled() {
		lv.read, lv.silent, lv.heard = read, 0, now
	} else if lv.silent++; lv.silent >= silentBeats*checksPerBeat {
		p.t.opts.Logger.Warn("boltmesh: peer silent, dropping its connection", "rank", p.t.rank, "peer", p.rank, "silent", now.Sub(lv.heard).Round(time.Millisecond))
		c.Abort(ErrNoHeartbeat)
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

// stalled reports whether this rank stopped reading p's connection while
// p may be live: a coordinator holds a worker back while its frames wait
// to be forwarded, and a connection stopped because p does not read this
// rank's answers (ioloop.Options.MaxPosted) counts as live while they
// still move.
func (p *peer) stalled() bool {
	c := p.ctlConn()
	return p.fwd.held() || c.Stopped() && c.BytesWritten() != p.live.written
}
