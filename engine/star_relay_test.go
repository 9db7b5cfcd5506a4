package engine_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/faulty"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/ioloop"
)

// A star's coordinator relays a routed payload longer than
// engine.RelayPart in parts (RELAY, then PARTs), each written on as it is
// read: it holds at most its window plus a part per worker, whatever a
// worker announces. The raw rank is worker 2 of the fuzz targets' star
// (rawpeer_fuzz_test.go), announcing frames of ocMaxFrame to worker 1.

// TestStarRelayBounded: frames for worker 1 that it refuses cost the
// coordinator no buffer of the announced size (before, it read each
// whole, up to MaxFrame); worker 1 refuses each on the relayed header
// as it would the frame whole, and the honest pair goes on.
func TestStarRelayBounded(t *testing.T) {
	cases := []struct {
		name string
		h    frame.Header
		drop error // what worker 1 drops the raw rank for; nil: it keeps it
	}{
		{name: "send-over-credit", h: frame.Header{Kind: frame.KindSend, Tag: 7, Length: ocMaxFrame}, drop: engine.ErrFlowControl},
		{name: "data-for-nothing", h: frame.Header{Kind: frame.KindData, Tag: 7, Offset: 99, Aux: 1 << 16, Length: ocMaxFrame}, drop: engine.ErrProtocol},
		{name: "put-outside-heap", h: frame.Header{Kind: frame.KindPut, Length: ocMaxFrame}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, ex := honestWorld(t, true, overCreditOpts())

			runtime.GC()
			peak := sampleHeap()
			if err := announce(w.raw, 1, 0, tc.h, nil, true); err != nil {
				t.Fatalf("announcing %v: %v", tc.h.Kind, err)
			}
			if tc.drop != nil {
				err := lossOf(w.ts[1], rawRank, 10*time.Second)
				if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, tc.drop) {
					t.Fatalf("worker 1's loss of the raw rank: %v; want ErrPeerLost for %v", err, tc.drop)
				}
			} else {
				if !w.raw.putRefused(1) {
					t.Fatalf("worker 1 did not refuse the PUT of %d bytes (raw rank: %v)", tc.h.Length, w.raw.deadErr())
				}
				if err := engine.PeerLost(w.ts[1], rawRank); err != nil {
					t.Fatalf("worker 1 dropped the raw rank for a PUT it must only refuse: %v", err)
				}
			}
			mark := ex.count.Load()
			ex.waitFor(t, mark+200) // the honest pair goes on
			grew := peak.stop()
			t.Logf("%s: heap peak +%d KiB (window %d KiB, %d announced)", tc.name, grew>>10, ocWindow>>10, tc.h.Length)
			if grew > ocWindow+ocSlack {
				t.Errorf("the heap grew by %d MiB at its peak, want at most the window (%d MiB) + %d MiB", grew>>20, ocWindow>>20, ocSlack>>20)
			}
			if err := engine.PeerLost(w.ts[0], rawRank); err != nil {
				t.Fatalf("the coordinator lost the raw rank, which broke nothing with it: %v", err)
			}
			if err := ex.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStarRelayWhole: a message longer than a part from worker 1 reaches
// the raw rank relayed in parts (its DATA, once the raw rank answered the
// RTS), its bytes whole.
func TestStarRelayWhole(t *testing.T) {
	w := rawWorld(t, true, overCreditOpts())
	msg := pattern(1, rawRank, 9, 0, 1<<20+5)
	sent := make(chan error, 1)
	go func() { sent <- w.ts[1].Send(rawRank, 9, msg) }()
	find := func(kind frame.Kind) (f rawFrame) {
		t.Helper()
		ok := w.raw.waitFor(10*time.Second, func() bool {
			for _, g := range w.raw.got {
				if g.h.Kind == kind && g.h.Tag == 9 && g.h.Src == 1 {
					f = g
					return true
				}
			}
			return false
		})
		if !ok {
			t.Fatalf("no %v from worker 1 (raw rank: %v)", kind, w.raw.deadErr())
		}
		return f
	}
	rts := find(frame.KindRTS)
	if err := w.raw.send(1, 0, frame.Header{Kind: frame.KindCTS, Offset: rts.h.Offset}, nil); err != nil {
		t.Fatal(err)
	}
	data := find(frame.KindData)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data.p, msg) {
		t.Fatalf("the raw rank got %d bytes of DATA; want worker 1's message of %d bytes whole", len(data.p), len(msg))
	}
	if n := w.raw.relayed.Load(); n != 1 {
		t.Fatalf("the coordinator relayed %d frames in parts, want 1", n)
	}
}

// TestStarRelayGone: a worker that dies halfway through a frame relayed
// in parts, or the coordinator that relays it, fails the receive its
// payload was being read into with ErrPeerLost, at once; a worker's death
// leaves its destination with the coordinator.
func TestStarRelayGone(t *testing.T) {
	for _, coordinator := range []bool{false, true} {
		name := "worker-dies"
		if coordinator {
			name = "coordinator-dies"
		}
		t.Run(name, func(t *testing.T) { starRelayGone(t, coordinator) })
	}
}

func starRelayGone(t *testing.T, coordinator bool) {
	opts := overCreditOpts()
	opts.EagerMax = 2 << 20
	w := rawWorld(t, true, opts)
	var ex *honestPair
	if !coordinator {
		ex = startHonest(t, w.ts)
		ex.waitFor(t, 20)
	}

	const n = 1 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recvd := make(chan error, 1)
	go func() {
		buf := make([]byte, n)
		_, err := w.ts[1].RecvIntoContext(ctx, rawRank, 7, buf)
		recvd <- err
	}()
	for end := time.Now().Add(10 * time.Second); engine.PostedRecvs(w.ts[1], rawRank) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("worker 1's receive was not posted")
		}
	}
	h := frame.Header{Kind: frame.KindSend, Tag: 7, Src: rawRank, Dst: 2, Length: n}
	var hb [frame.HeaderSize]byte
	h.Encode(&hb)
	if err := w.raw.streams[0][0].writeRaw(append(hb[:], make([]byte, n/2)...)); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); !engine.ReadInFlight(w.ts[1], rawRank); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("worker 1 is not reading the relayed frame into its receive")
		}
	}
	if coordinator {
		w.ts[0].Close()
	} else {
		w.raw.close()
	}
	select {
	case err := <-recvd:
		if !errors.Is(err, engine.ErrPeerLost) {
			t.Fatalf("worker 1's receive of the frame cut off midway: %v; want ErrPeerLost", err)
		}
	case <-ctx.Done():
		t.Fatal("worker 1's receive of the frame cut off midway did not end")
	}
	if coordinator {
		return
	}
	mark := ex.count.Load()
	ex.waitFor(t, mark+200) // worker 1 kept the coordinator
	if err := ex.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestStarRelayBreach: a coordinator that relays out of the spec's order
// (a PART nobody announced, one out of place, a RELAY of a kind nobody
// relays, a frame from the source between its parts, a RELAY of its own)
// loses its worker for ErrProtocol.
func TestStarRelayBreach(t *testing.T) {
	var relaySend, relayBeat [frame.HeaderSize]byte
	frame.EncodeRelay(&relaySend, &frame.Header{Kind: frame.KindSend, Tag: 3, Length: 1 << 20}, 2)
	(&frame.Header{Kind: frame.KindHeartbeat, Src: 2}).Encode(&relayBeat)
	type post struct {
		h frame.Header
		p []byte
	}
	relay := post{frame.Header{Kind: frame.KindRelay, Src: 2}, relaySend[:]}
	cases := []struct {
		name  string
		posts []post
	}{
		{name: "part-unannounced", posts: []post{{frame.Header{Kind: frame.KindPart, Src: 2}, make([]byte, 10)}}},
		{name: "part-out-of-place", posts: []post{relay, {frame.Header{Kind: frame.KindPart, Src: 2, Offset: 4096}, make([]byte, 10)}}},
		{name: "part-too-long", posts: []post{relay, {frame.Header{Kind: frame.KindPart, Src: 2}, make([]byte, 1<<20+1)}}},
		{name: "relay-not-routed", posts: []post{{frame.Header{Kind: frame.KindRelay, Src: 2}, relayBeat[:]}}},
		{name: "relay-in-relay", posts: []post{relay, relay}},
		{name: "send-in-relay", posts: []post{relay, {frame.Header{Kind: frame.KindSend, Src: 2, Tag: 3}, []byte("between the parts")}}},
		{name: "relay-of-its-own", posts: []post{{frame.Header{Kind: frame.KindRelay}, relaySend[:]}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := meshtest.Star(t, 3, engine.Options{})
			for _, p := range tc.posts {
				if err := engine.CoordinatorPost(ts[0], 1, p.h, p.p); err != nil {
					t.Fatal(err)
				}
			}
			err := lossOf(ts[1], 0, 10*time.Second)
			if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrProtocol) {
				t.Fatalf("worker 1's loss of the coordinator: %v; want ErrPeerLost for ErrProtocol", err)
			}
		})
	}
}

// TestStarForwardBounded: a worker floods its coordinator with frames
// that carry no payload (CREDIT) for a worker whose stream does not take
// them (stalled, and the liveness checks too slow to drop it): each
// holds the coordinator a queue entry until it is written on. The
// coordinator counts that (fwdCost) and stops reading the flooder past
// its window, so its heap grows by at most the window and a slack;
// before, frames without payload counted nothing and a million of them
// held the coordinator over 200 MiB.
func TestStarForwardBounded(t *testing.T) {
	var mu sync.Mutex
	var toWorker1 *faulty.Stream
	engine.SetStreamHook(func(tr *engine.NetTransport, rank, stream int, s ioloop.Stream) ioloop.Stream {
		if tr.Rank() != 0 || rank != 1 {
			return s
		}
		f := faulty.Wrap(s)
		mu.Lock()
		toWorker1 = f
		mu.Unlock()
		return f
	})
	opts := overCreditOpts()
	opts.KeepAlive = time.Hour
	w := rawWorld(t, true, opts)
	engine.SetStreamHook(nil)
	mu.Lock()
	f := toWorker1
	mu.Unlock()
	if f == nil {
		t.Fatal("the coordinator's stream to worker 1 is not under a faulty.Stream")
	}
	f.Stall(true)
	t.Cleanup(func() { f.Stall(false) })
	runtime.GC()
	peak := sampleHeap()
	const frames = 1_000_000
	var sent atomic.Int64
	go func() {
		for i := range frames {
			h := frame.Header{Kind: frame.KindCredit, Offset: uint64(i + 1)}
			if w.raw.send(1, 0, h, nil) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	last := int64(-1)
	for n := sent.Load(); n != last && n < frames; n = sent.Load() {
		last = n
		time.Sleep(500 * time.Millisecond)
	}
	runtime.GC()
	held, grew := heapInuse()-peak.before, peak.stop()
	t.Logf("the coordinator took %d of %d frames for a stalled worker; heap +%d KiB after GC, peak +%d KiB (window %d KiB)", sent.Load(), frames, held>>10, grew>>10, ocWindow>>10)
	if sent.Load() == frames {
		t.Errorf("the coordinator took all %d frames for a worker that takes none: no backpressure", frames)
	}
	if held > ocWindow+ocSlack {
		t.Errorf("the coordinator's heap grew by %d MiB, want at most the window (%d MiB) + %d MiB", held>>20, ocWindow>>20, ocSlack>>20)
	}
}
