package engine_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/faulty"
	"github.com/boltmesh/boltmesh/ioloop"
)

// What an operator reads: a peer lost to tampering, silence or a breach
// of the protocol is logged once, by each rank that lost it, with the
// cause; a warning a peer can cause over and over is logged once, then
// counted.

// lostPeerMsg is the message of the line a loss logs.
const lostPeerMsg = "boltmesh: lost a peer"

// attr returns the value of r's attribute key, or nil.
func attr(r slog.Record, key string) any {
	var v any
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.Any()
			return false
		}
		return true
	})
	return v
}

// lossLines returns the lines rank logged of its loss of peer, and how
// many other lines it logged.
func lossLines(log *recordLog, rank, peer int) (lines []slog.Record, others int) {
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, r := range log.recs {
		if attr(r, "rank") != int64(rank) {
			continue
		}
		if r.Message == lostPeerMsg && attr(r, "peer") == int64(peer) {
			lines = append(lines, r)
		} else {
			others++
		}
	}
	return lines, others
}

// TestLossLoggedOnce: rank 0 loses rank 1 to a sealed record left out,
// to the silence of a data stream, or to a frame header that does not
// decode. Each of the two ranks logs one line of its loss of the other,
// and nothing else, with the fault as its cause: the rank that found it
// its own, the other what that one told it (a *DroppedError), unless it
// found the same (silence both ways); rank 2 logs nothing.
func TestLossLoggedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seal  bool
		fault func(ts []*engine.NetTransport, f map[faultKey]*faulty.Stream)
		cause error // the cause of the line of the rank that found the fault
		told  error // the cause of the other's line, if that rank was told (DROP)
	}{
		{"tampered", true, func(ts []*engine.NetTransport, f map[faultKey]*faulty.Stream) {
			f[faultKey{1, 0, 0}].DropWrite()
			ts[1].Send(0, 5, pattern(1, 0, 5, 0, 16<<10))
		}, engine.ErrTampered, engine.ErrTampered},
		{"silent", false, func(_ []*engine.NetTransport, f map[faultKey]*faulty.Stream) {
			f[faultKey{0, 1, 1}].Stall(true)
		}, engine.ErrNoHeartbeat, engine.ErrNoHeartbeat},
		{"protocol", false, func(ts []*engine.NetTransport, f map[faultKey]*faulty.Stream) {
			f[faultKey{0, 1, 0}].Corrupt(0) // the next frame's kind
			ts[1].Send(0, 5, []byte("hello"))
		}, ioloop.ErrProtocol, engine.ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &recordLog{}
			opts := engine.Options{Streams: 2, KeepAlive: silenceKA, Logger: log.logger()}
			if tc.seal {
				opts.Seal, opts.MeshKey = engine.SealAlways, sealKey
			}
			ts, faults := faultyMesh(t, 3, opts)
			pingPong(t, ts[1], ts[0])
			tc.fault(ts, faults)
			awaitLosses(t, ts, 0, 1, time.Now())
			time.Sleep(3 * silenceKA) // what a second log line would take
			found := false
			for _, r := range [][2]int{{0, 1}, {1, 0}} {
				lines, others := lossLines(log, r[0], r[1])
				if len(lines) != 1 || others != 0 {
					t.Fatalf("rank %d logged %d lines of its loss of rank %d and %d others, want 1 and 0", r[0], len(lines), r[1], others)
				}
				cause, _ := attr(lines[0], "cause").(error)
				var de *engine.DroppedError
				switch {
				case errors.Is(cause, tc.cause) && !errors.As(cause, &de):
					found = true
				case errors.As(cause, &de) && errors.Is(cause, tc.told):
				default:
					t.Fatalf("rank %d logged its loss of rank %d with %v, want %v, found or told", r[0], r[1], cause, tc.cause)
				}
			}
			if !found {
				t.Fatalf("no rank logged the loss with %v as its cause", tc.cause)
			}
			if _, others := lossLines(log, 2, -1); others != 0 {
				t.Fatalf("rank 2 logged %d lines", others)
			}
		})
	}
}

// TestStarUnroutableLogged: a worker that sends the coordinator frame
// after frame it cannot forward (addressed to the worker itself) gets
// them dropped, and the coordinator logs it once, not once a frame; the
// honest workers go on.
func TestStarUnroutableLogged(t *testing.T) {
	log := &recordLog{}
	opts := overCreditOpts()
	opts.Logger = log.logger()
	w, ex := honestWorld(t, true, opts)
	const frames = 100_000
	for range frames {
		h := frame.Header{Kind: frame.KindCredit, Dst: rawRank + 1} // to itself
		if err := w.raw.send(0, 0, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	mark := ex.count.Load()
	ex.waitFor(t, mark+200) // the coordinator has read on past them
	n := log.count(func(r slog.Record) bool {
		return r.Message == "boltmesh: dropped a frame the coordinator cannot forward"
	})
	if n != 1 {
		t.Fatalf("the coordinator logged %d lines for %d frames it could not forward, want 1", n, frames)
	}
	if err := engine.PeerLost(w.ts[0], rawRank); err != nil {
		t.Fatalf("the coordinator lost the worker: %v", err)
	}
	if err := ex.stop(); err != nil {
		t.Fatal(err)
	}
}
