package engine

import (
	"errors"
	"time"

	"github.com/boltmesh/boltmesh/frame"
)

// ErrNoHeartbeat is the cause (errors.Is) of a peer's loss when nothing at
// all was heard from it for 4*Options.KeepAlive while this rank was
// reading its connection: the link went silent without a FIN, RST or ICMP
// error (host gone, cable pulled, link down).
var ErrNoHeartbeat = errors.New("nothing heard from the peer within 4*KeepAlive")

// silentBeats is how many KeepAlive periods of silence lose a peer.
const silentBeats = 4

// liveness is one connection's heartbeat bookkeeping; only the heartbeat
// goroutine touches it.
type liveness struct {
	read, written uint64    // socket byte counts at the last check
	heard         time.Time // when bytes last arrived (or reading last stalled)
}

// startHeartbeat starts the goroutine that, every KeepAlive, sends a
// HEARTBEAT on each connection that sent nothing since the last check, and
// aborts each connection from which nothing arrived for 4*KeepAlive. A
// connection this rank stopped reading (backpressure, a deferred payload)
// is exempt while it stays so: its peer's heartbeats wait unread in the
// socket. TCP keepalive still covers it.
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
	tick := time.NewTicker(t.opts.KeepAlive)
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

// checkLive sends p a heartbeat if this rank sent it nothing since the last
// check, and aborts p's connection if nothing arrived from it for
// silentBeats KeepAlive periods while this rank was reading it.
func (p *peer) checkLive(now time.Time) {
	c, lv := p.conn, &p.live
	if c.Err() != nil {
		return
	}
	if read := c.BytesRead(); read != lv.read || p.stalled() {
		lv.read, lv.heard = read, now
	} else if now.Sub(lv.heard) > silentBeats*p.t.opts.KeepAlive {
		p.t.opts.Logger.Warn("boltmesh: peer silent, dropping its connection", "rank", p.t.rank, "peer", p.rank, "silent", now.Sub(lv.heard).Round(time.Millisecond))
		c.Abort(ErrNoHeartbeat)
		return
	}
	if c.BytesWritten() == lv.written && c.Queued() == 0 {
		h := frame.Header{Kind: frame.KindHeartbeat, Src: uint32(p.t.rank)}
		c.Post(&h, nil, false)
	}
	lv.written = c.BytesWritten()
}

// stalled reports whether this rank stopped reading p's connection while
// p may be live: a coordinator holds a worker back while its frames wait
// to be forwarded, and a connection stopped because p does not read this
// rank's answers (ioloop.Options.MaxPosted) counts as live while they
// still move.
func (p *peer) stalled() bool {
	return p.fwd.held() || p.conn.Stopped() && p.conn.BytesWritten() != p.live.written
}
