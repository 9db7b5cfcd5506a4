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
			w, err := openRawWorld(true, peerOpts())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.close)
			ex := startHonest(t, w.ts)
			ex.waitFor(t, 20)

			if err := announce(w.raw, 1, 0, tc.h, nil, tc.body); err != nil {
				t.Fatalf("announcing %v: %v", tc.h.Kind, err)
			}
			err = engine.PeerLost(w.ts[1], rawRank)
			for end := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(end); time.Sleep(time.Millisecond) {
				err = engine.PeerLost(w.ts[1], rawRank)
			}
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
