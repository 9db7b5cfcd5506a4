package engine

import (
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

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
			for _, p := range t.view().peers {
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
