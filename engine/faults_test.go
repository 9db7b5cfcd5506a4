package engine_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/link/faulty"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Failures of one link, made by the fault-injecting Stream
// (internal/link/faulty) under a real mesh over TCP, after it formed: a
// link that stalls (a peer whose process stopped while its kernel still
// acknowledges), whose bytes are corrupted, that is cut, or slow. The
// ranks on it lose each other as the engine promises (ErrPeerLost, with
// the right cause) and the others go on; a slow one only delays.

// faultKey names one end of a link: the rank whose connection it is, the
// peer's rank, and the stream's index (the control stream's is Streams).
type faultKey struct{ rank, peer, stream int }

// faultyMesh builds an n-rank mesh over TCP (no shared memory) whose
// every connection is under a faulty.Stream, and returns its transports
// and their streams' fault controls. Its ranks log nothing unless opts
// has a Logger.
func faultyMesh(t *testing.T, n int, opts engine.Options) ([]*engine.NetTransport, map[faultKey]*faulty.Stream) {
	t.Helper()
	var mu sync.Mutex
	byTransport := map[*engine.NetTransport]map[[2]int]*faulty.Stream{}
	engine.SetStreamHook(func(tr *engine.NetTransport, rank, stream int, s ioloop.Stream) ioloop.Stream {
		f := faulty.Wrap(s)
		mu.Lock()
		defer mu.Unlock()
		if byTransport[tr] == nil {
			byTransport[tr] = map[[2]int]*faulty.Stream{}
		}
		byTransport[tr][[2]int{rank, stream}] = f
		return f
	})
	defer engine.SetStreamHook(nil)
	opts.SharedMemory = engine.SharedMemoryOff
	if opts.Logger == nil {
		opts.Logger = discardLogger
	}
	ts := meshtest.Mesh(t, n, opts)
	faults := map[faultKey]*faulty.Stream{}
	mu.Lock()
	defer mu.Unlock()
	for r, tr := range ts {
		for k, f := range byTransport[tr] {
			faults[faultKey{r, k[0], k[1]}] = f
		}
	}
	if want := n * (n - 1) * (opts.Streams + 1); len(faults) != want {
		t.Fatalf("%d connections under faulty streams, want %d", len(faults), want)
	}
	return ts, faults
}

// linkOf returns the fault controls of every stream of rank's link to
// peer.
func linkOf(faults map[faultKey]*faulty.Stream, rank, peer int) []*faulty.Stream {
	var fs []*faulty.Stream
	for k, f := range faults {
		if k.rank == rank && k.peer == peer {
			fs = append(fs, f)
		}
	}
	return fs
}

// awaitLoss waits until tr has lost rank and returns the loss.
func awaitLoss(t *testing.T, tr *engine.NetTransport, rank int, within time.Duration) error {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if err := engine.PeerLost(tr, rank); err != nil {
			return err
		}
	}
	t.Fatalf("rank %d did not lose rank %d within %v", tr.Rank(), rank, within)
	return nil
}

// pingPong checks that a and b still exchange a message each way.
func pingPong(t *testing.T, a, b *engine.NetTransport) {
	t.Helper()
	msg := []byte("still here")
	if err := a.Send(b.Rank(), 31, msg); err != nil {
		t.Fatalf("rank %d to %d: %v", a.Rank(), b.Rank(), err)
	}
	got, err := b.RecvTimeout(a.Rank(), 31, 10*time.Second)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("rank %d from %d: %q, %v", b.Rank(), a.Rank(), got, err)
	}
}

// TestStalledLinkDroppedByHeartbeats: rank 0's end of its link to rank 1
// stops moving bytes either way, as a stopped process's would, while the
// sockets stay open. Rank 0 drops rank 1 for silence (ErrNoHeartbeat);
// rank 1 drops rank 0, for silence too or for the end of the link that
// rank 0's drop makes, whichever comes first; a receive waiting on the
// lost peer fails, and rank 0 still works with rank 2.
func TestStalledLinkDroppedByHeartbeats(t *testing.T) {
	const keepAlive = 100 * time.Millisecond
	ts, faults := faultyMesh(t, 3, engine.Options{Streams: 1, KeepAlive: keepAlive})
	recv := make(chan error, 1)
	go func() {
		_, err := ts[0].Recv(1, 5)
		recv <- err
	}()
	for _, f := range linkOf(faults, 0, 1) {
		f.Stall(true)
	}
	err := awaitLoss(t, ts[0], 1, 100*keepAlive)
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrNoHeartbeat) {
		t.Fatalf("rank 0 lost rank 1 with %v, want ErrPeerLost for ErrNoHeartbeat", err)
	}
	if err := awaitLoss(t, ts[1], 0, 100*keepAlive); !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("rank 1 lost rank 0 with %v, want ErrPeerLost", err)
	}
	if err := <-recv; !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("the receive from the lost rank: %v, want ErrPeerLost", err)
	}
	pingPong(t, ts[0], ts[2])
	pingPong(t, ts[2], ts[0])
}

// TestCorruptHeaderDropsPeer: a byte of a frame header flipped on the
// wire (its kind, after the handshake) makes the receiving rank drop the
// sender for a protocol error, which the sender sees as the loss of the
// receiver; the third rank goes on with both.
func TestCorruptHeaderDropsPeer(t *testing.T) {
	ts, faults := faultyMesh(t, 3, engine.Options{Streams: 1})
	faults[faultKey{0, 1, 0}].Corrupt(0) // the next frame on data stream 0 from rank 1
	if err := ts[1].Send(0, 5, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	err := awaitLoss(t, ts[0], 1, 10*time.Second)
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, ioloop.ErrProtocol) {
		t.Fatalf("rank 0 lost rank 1 with %v, want ErrPeerLost for ioloop.ErrProtocol", err)
	}
	if err := awaitLoss(t, ts[1], 0, 10*time.Second); !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("rank 1 lost rank 0 with %v, want ErrPeerLost", err)
	}
	pingPong(t, ts[0], ts[2])
	pingPong(t, ts[1], ts[2])
}

// TestCutStripeLosesPeer: one stripe of a link with two data streams is
// cut: both ranks on it lose each other at once, and both still work
// with the third.
func TestCutStripeLosesPeer(t *testing.T) {
	ts, faults := faultyMesh(t, 3, engine.Options{Streams: 2})
	faults[faultKey{0, 1, 1}].Cut()
	for _, tc := range []struct{ tr, lost int }{{0, 1}, {1, 0}} {
		if err := awaitLoss(t, ts[tc.tr], tc.lost, 10*time.Second); !errors.Is(err, engine.ErrPeerLost) {
			t.Fatalf("rank %d lost rank %d with %v, want ErrPeerLost", tc.tr, tc.lost, err)
		}
	}
	pingPong(t, ts[0], ts[2])
	pingPong(t, ts[2], ts[1])
}

// TestSlowLinkDelivers: a link whose every byte arrives 30 ms late (on
// each side) delivers every message whole and in order, no round trip
// takes less than the two delays, and nobody is dropped.
func TestSlowLinkDelivers(t *testing.T) {
	const delay = 30 * time.Millisecond
	ts, faults := faultyMesh(t, 2, engine.Options{Streams: 1})
	for _, f := range append(linkOf(faults, 0, 1), linkOf(faults, 1, 0)...) {
		f.Delay(delay)
	}
	go func() {
		buf := make([]byte, 64<<10)
		for i := 0; i < 5; i++ {
			n, err := ts[1].RecvInto(0, 7, buf)
			if err != nil {
				return
			}
			ts[1].Send(0, 8, buf[:n])
		}
	}()
	for i := range 5 {
		msg := bytes.Repeat([]byte{byte(i + 1)}, 1000*(i+1))
		start := time.Now()
		if err := ts[0].Send(1, 7, msg); err != nil {
			t.Fatal(err)
		}
		got, err := ts[0].RecvTimeout(1, 8, 10*time.Second)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round trip %d: %d bytes, %v", i, len(got), err)
		}
		if took := time.Since(start); took < 2*delay {
			t.Fatalf("round trip %d took %v, under the links' two delays (%v)", i, took, 2*delay)
		}
	}
	if err := engine.PeerLost(ts[0], 1); err != nil {
		t.Fatalf("a slow link was dropped: %v", err)
	}
}
