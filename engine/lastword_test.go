package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// TestDropTaken: a DROP from a peer (the raw rank) ends it at once: the
// rank loses it with a *DroppedError carrying its words, the stream it
// names and the fault's sentinel (none for a fault this build does not
// know), whichever stream it came on; the honest pair goes on.
func TestDropTaken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  uint32
		stream int // the raw rank's stream it goes on (rawPeer.conn)
		want   error
	}{
		{"tampered on the control stream", frame.DropTampered, ctlStreamIndex, engine.ErrTampered},
		{"silent on data stream 0", frame.DropSilent, 0, engine.ErrNoHeartbeat},
		{"unknown fault", 99, ctlStreamIndex, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ex := honestWorld(t, false, overCreditOpts())
			h := frame.Header{Kind: frame.KindDrop, Aux: tc.fault, Offset: 7}
			if err := w.raw.send(0, tc.stream, h, []byte("its words")); err != nil {
				t.Fatal(err)
			}
			err := lossOf(w.ts[0], rawRank, 10*time.Second)
			var de *engine.DroppedError
			if !errors.Is(err, engine.ErrPeerLost) || !errors.As(err, &de) {
				t.Fatalf("rank 0's loss of the raw rank: %v, want a *DroppedError", err)
			}
			if de.Stream != 7 || de.Reason != "its words" || de.Err != tc.want {
				t.Fatalf("%+v, want stream 7, its words, %v", *de, tc.want)
			}
			mark := ex.count.Load()
			ex.waitFor(t, mark+100)
			if err := ex.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDropThroughCoordinator: a worker cannot make another drop it, nor
// pose as a rank that drops it, through a star's coordinator: a DROP
// carries no destination, so the coordinator refuses one that names one
// (the decoder's ErrReserved, and the worker is dropped); the honest
// worker keeps the raw one.
func TestDropThroughCoordinator(t *testing.T) {
	w, ex := honestWorld(t, true, overCreditOpts())
	h := frame.Header{Kind: frame.KindDrop, Aux: frame.DropTampered, Dst: 1 + 1}
	if err := w.raw.send(1, 0, h, []byte("to worker 1")); err != nil {
		t.Fatal(err)
	}
	if err := lossOf(w.ts[0], rawRank, 10*time.Second); !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, frame.ErrReserved) {
		t.Fatalf("the coordinator's loss of the raw worker: %v, want ErrPeerLost for frame.ErrReserved", err)
	}
	var de *engine.DroppedError
	if err := lossOf(w.ts[1], rawRank, 10*time.Second); errors.As(err, &de) {
		t.Fatalf("worker 1 took a DROP through the coordinator: %v", err)
	}
	mark := ex.count.Load()
	ex.waitFor(t, mark+100)
	if err := ex.stop(); err != nil {
		t.Fatal(err)
	}
}
