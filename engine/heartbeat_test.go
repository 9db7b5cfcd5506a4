package engine_test

import (
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// linkKinds are the ways a pair of the heartbeat tests is joined: pipes
// between neighbours, and TCP with several data streams, each watched on
// its own.
var linkKinds = []struct {
	name string
	opts engine.Options
}{
	{"pipes", engine.Options{}},
	{"tcp", engine.Options{SharedMemory: engine.SharedMemoryOff, Streams: 3}},
}

// TestHeartbeatSparesSlowReceiver: a receiver that takes nothing for many
// liveness periods, while its sender is held back by backpressure (the
// receiver stops reading past MaxQueuedBytes, and leaves large messages in
// the data stream until their receive), is slow, not dead: neither side
// drops the other, and every message arrives intact afterwards.
func TestHeartbeatSparesSlowReceiver(t *testing.T) {
	const ka, msgs, size = 50 * time.Millisecond, 24, 256 << 10
	for _, k := range linkKinds {
		t.Run(k.name, func(t *testing.T) {
			opts := k.opts
			opts.KeepAlive, opts.MaxQueuedBytes, opts.SocketBuffer = ka, 1<<20, 64<<10
			ts := meshtest.Mesh(t, 2, opts)
			sent := make(chan error, 1)
			go func() {
				for i := range msgs {
					if err := ts[0].Send(1, 3, pattern(0, 1, 3, i, size)); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			time.Sleep(20 * ka) // five times the silence that loses a peer
			for i := range msgs {
				got, err := ts[1].Recv(0, 3)
				if err != nil {
					t.Fatalf("message %d after the pause: %v", i, err)
				}
				if err := check(got, 0, 1, 3, i, size); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
			if err := <-sent; err != nil {
				t.Fatalf("sender: %v", err)
			}
		})
	}
}

// TestHeartbeatKeepsIdleMeshAlive: ranks that exchange nothing for many
// liveness periods stay connected (the heartbeats are heard, on every
// stream: each is watched).
func TestHeartbeatKeepsIdleMeshAlive(t *testing.T) {
	const ka = 20 * time.Millisecond
	for _, k := range linkKinds {
		t.Run(k.name, func(t *testing.T) {
			opts := k.opts
			opts.KeepAlive = ka
			ts := meshtest.Mesh(t, 3, opts)
			time.Sleep(30 * ka)
			for r, tr := range ts {
				if err := tr.Send((r+1)%3, 1, []byte{byte(r)}); err != nil {
					t.Fatalf("rank %d after idling: %v", r, err)
				}
			}
			for r, tr := range ts {
				got, err := tr.Recv((r+2)%3, 1)
				if err != nil || len(got) != 1 || int(got[0]) != (r+2)%3 {
					t.Fatalf("rank %d after idling: %v %v", r, got, err)
				}
			}
		})
	}
}

// TestHeartbeatSparesHeldBackStarWorker: in a star, a worker that sends to
// a worker that takes nothing for many liveness periods is held back by
// the coordinator (it stops reading the sender past MaxQueuedBytes
// forwarded and not yet written on): the sender is slow, not dead, and no
// rank drops another; every message arrives intact afterwards.
func TestHeartbeatSparesHeldBackStarWorker(t *testing.T) {
	const ka, msgs, size = 50 * time.Millisecond, 24, 256 << 10
	ts := meshtest.Star(t, 3, engine.Options{KeepAlive: ka, MaxQueuedBytes: 1 << 20, SocketBuffer: 64 << 10})
	sent := make(chan error, 1)
	go func() {
		for i := range msgs {
			if err := ts[1].Send(2, 3, pattern(1, 2, 3, i, size)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	time.Sleep(20 * ka) // five times the silence that loses a peer
	for i := range msgs {
		got, err := ts[2].Recv(1, 3)
		if err != nil {
			t.Fatalf("message %d after the pause: %v", i, err)
		}
		if err := check(got, 1, 2, 3, i, size); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := <-sent; err != nil {
		t.Fatalf("sender: %v", err)
	}
}

// TestHeartbeatSparesDeferredStream: a large eager message that nobody
// waits for stays in the data stream until its receive is posted, and
// the receiver reads nothing more of that stream meanwhile: it is not
// the peer's silence, and after many liveness periods the message
// arrives intact and the pair goes on.
func TestHeartbeatSparesDeferredStream(t *testing.T) {
	const ka, size = 50 * time.Millisecond, 64 << 10
	for _, k := range linkKinds {
		t.Run(k.name, func(t *testing.T) {
			opts := k.opts
			opts.KeepAlive = ka
			ts := meshtest.Mesh(t, 2, opts)
			if err := ts[0].Send(1, 3, pattern(0, 1, 3, 0, size)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * ka) // five times the silence that loses a peer
			got, err := ts[1].Recv(0, 3)
			if err != nil {
				t.Fatalf("the message after the pause: %v", err)
			}
			if err := check(got, 0, 1, 3, 0, size); err != nil {
				t.Fatal(err)
			}
			pingPong(t, ts[1], ts[0])
		})
	}
}
