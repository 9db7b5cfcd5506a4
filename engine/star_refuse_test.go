package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// A star worker that breaks the protocol towards another worker is
// dropped by that worker alone: the stream they share is the victim's one
// connection to the coordinator, which it keeps, so one worker cannot cut
// another off by sending it a frame it must refuse. The raw rank is
// worker 2 of the fuzz targets' star (rawpeer_fuzz_test.go); worker 1 and
// the coordinator exchange meanwhile, and go on after.
func TestStarRoutedBreach(t *testing.T) {
	cases := []struct {
		name string
		h    frame.Header
		body bool
		drop error
	}{
		{name: "cts", h: frame.Header{Kind: frame.KindCTS, Offset: 12345}, drop: engine.ErrProtocol},
		{name: "data", h: frame.Header{Kind: frame.KindData, Tag: 7, Offset: 99, Aux: 1 << 16, Length: 64 << 10}, body: true, drop: engine.ErrProtocol},
		{name: "over-credit", h: frame.Header{Kind: frame.KindSend, Tag: 7, Length: 128 << 10}, body: true, drop: engine.ErrFlowControl},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, ex := honestWorld(t, true, peerOpts())
			if err := announce(w.raw, 1, 0, tc.h, nil, tc.body); err != nil {
				t.Fatalf("announcing %v: %v", tc.h.Kind, err)
			}
			err := lossOf(w.ts[1], rawRank, 10*time.Second)
			if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, tc.drop) {
				t.Fatalf("worker 1's loss of worker 2: %v; want ErrPeerLost for %v", err, tc.drop)
			}
			mark := ex.count.Load()
			ex.waitFor(t, mark+200) // worker 1 kept the coordinator
			if err := engine.PeerLost(w.ts[1], 0); err != nil {
				t.Fatalf("worker 1 lost the coordinator for worker 2's %v: %v", tc.h.Kind, err)
			}
			if err := engine.PeerLost(w.ts[0], rawRank); err != nil {
				t.Fatalf("the coordinator lost worker 2, which broke nothing with it: %v", err)
			}

			// What worker 2 sends worker 1 after is dropped unread, and the
			// receive fails for the loss.
			if err := w.raw.send(1, 0, frame.Header{Kind: frame.KindSend, Tag: 8}, []byte("after the drop")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			buf := make([]byte, 64)
			_, err = w.ts[1].RecvIntoContext(ctx, rawRank, 8, buf)
			if !errors.Is(err, engine.ErrPeerLost) {
				t.Fatalf("a receive from the dropped worker: %v; want ErrPeerLost", err)
			}
			if err := ex.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStarWorkerNotReading: a star worker that stops reading its stream
// while still sending heartbeats is dropped by the coordinator once its
// frames have waited unwritten for 4 KeepAlive periods (ErrNotReading).
// Before, the frames other workers sent it piled up at the coordinator,
// which then held those workers' streams back for good: one worker could
// stall every worker that sends to it, and through them the coordinator.
// The raw rank is worker 2; it grants worker 1 credit for 64 MiB and
// reads nothing, while worker 1 sends it 4 KiB messages and keeps its
// ping-pong with the coordinator going.
func TestStarWorkerNotReading(t *testing.T) {
	opts := peerOpts()
	opts.KeepAlive = 100 * time.Millisecond
	w, ex := honestWorld(t, true, opts)

	w.raw.deaf.Store(true)
	if err := w.raw.grant(1, 64<<20); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	beats := make(chan error, 1)
	go func() { // alive, as far as heartbeats go
		for ctx.Err() == nil {
			if err := w.raw.send(0, 0, frame.Header{Kind: frame.KindHeartbeat}, nil); err != nil {
				beats <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		beats <- nil
	}()
	sent := make(chan error, 1)
	go func() {
		msg := make([]byte, 4<<10)
		for ctx.Err() == nil {
			if err := w.ts[1].SendContext(ctx, rawRank, 9, msg); err != nil {
				sent <- err
				return
			}
		}
		sent <- ctx.Err()
	}()

	lost := lossOf(w.ts[0], rawRank, 20*time.Second)
	if !errors.Is(lost, engine.ErrPeerLost) || !errors.Is(lost, engine.ErrNotReading) {
		t.Fatalf("the coordinator's loss of the worker that reads nothing: %v; want ErrPeerLost for ErrNotReading", lost)
	}
	select {
	case err := <-sent:
		if !errors.Is(err, engine.ErrPeerLost) {
			t.Fatalf("worker 1's sends to the worker that reads nothing ended with %v, want ErrPeerLost", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("worker 1's sends to the dropped worker did not end")
	}
	mark := ex.count.Load()
	ex.waitFor(t, mark+200) // worker 1 and the coordinator go on
	if err := engine.PeerLost(w.ts[1], 0); err != nil {
		t.Fatalf("worker 1 lost the coordinator: %v", err)
	}
	cancel()
	<-beats
	if err := ex.stop(); err != nil {
		t.Fatal(err)
	}
}
