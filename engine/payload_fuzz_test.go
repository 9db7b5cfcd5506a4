package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/fuzzkit"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// The engine's own payload, as a rank decodes what a peer sends: the
// epoch a barrier signal carries. Rank 0 of a 2-rank mesh in this process
// (kept across iterations) runs the barrier; rank 1 plays its part by
// hand with the payload the fuzzer says, on the barrier's reserved tag.
// (Comm.Alloc's records are fuzzed in package collective.)

// payloadMesh is the mesh the target uses.
func payloadMesh() *meshtest.Kept {
	return &meshtest.Kept{N: 2, Opts: engine.Options{HeapSize: 1 << 20, Logger: discardLogger, Spin: -1}}
}

// fuzzWait bounds each wait of these targets: well under the 10 s the
// fuzzing engine allows one input before it kills the worker as hung
// without a word (go.dev/issue/56238), so that a wait that runs out
// fails the iteration with its own message first.
const fuzzWait = 3 * time.Second

// FuzzBarrierPayload: rank 0 enters a barrier and rank 1 answers its
// signal (the epoch, 8 bytes) with a sequence of signals the fuzzer
// describes (the right epoch, an earlier or a later one, shorter or
// longer ones, any 8 bytes), then the right one. Rank 0 must take them in
// order: drop an earlier epoch and wait on, complete on its own, fail
// with ErrBarrierSkew on a later one, with a LengthMismatchError on a
// short one and ErrTruncated on a long one (which stays queued); and
// after a failure the next barrier must complete where it stopped.
//
// Over TCP: between neighbours a barrier signals through shared memory,
// and answers frames only (TestBarrierMailFrames).
func FuzzBarrierPayload(f *testing.F) {
	m := payloadMesh()
	m.Opts.SharedMemory = engine.SharedMemoryOff
	f.Cleanup(m.Reset)
	f.Add([]byte{})
	f.Add([]byte{0, 0xff})                      // epoch - 1, dropped
	f.Add([]byte{0, 1})                         // epoch + 1: skew
	f.Add([]byte{1, 3})                         // 3 bytes
	f.Add([]byte{2, 0})                         // 9 bytes
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0x80}) // 2^63
	f.Add([]byte{0, 0xfe, 0, 0xff, 0, 0})       // two stale, then the epoch

	f.Fuzz(func(t *testing.T, script []byte) {
		ts, err := m.Get()
		if err != nil {
			t.Fatal(err)
		}
		defer fuzzkit.Guard(9*time.Second, func() string { return fmt.Sprintf("script % x", script) })()
		ok := false
		defer func() {
			if !ok {
				m.Reset()
			}
		}()
		done := make(chan error, 1)
		barrier := func() {
			ctx, cancel := context.WithTimeout(context.Background(), fuzzWait)
			defer cancel()
			done <- ts[0].BarrierContext(ctx)
		}
		go barrier()
		sig, err := engine.RecvTag(ts[1], 0, engine.TagBarrier, fuzzWait)
		if err != nil || len(sig) != 8 {
			t.Fatalf("rank 0's barrier signal % x: %v", sig, err)
		}
		epoch := binary.LittleEndian.Uint64(sig)
		msgs := barrierSignals(script, epoch)
		for _, p := range msgs {
			if err := engine.SendTag(ts[1], 0, engine.TagBarrier, p); err != nil {
				t.Fatal(err)
			}
		}
		err = <-done
		decisive, want := barrierOutcome(msgs, epoch)
		checkBarrierErr(t, msgs[decisive], epoch, err, want)
		left := msgs[decisive+1:]
		if errors.Is(want, engine.ErrTruncated) {
			left = msgs[decisive:]
		}
		for _, p := range left { // what rank 0 has not taken is queued, in order
			if got, err := engine.RecvTag(ts[0], 1, engine.TagBarrier, fuzzWait); err != nil || !bytes.Equal(got, p) {
				t.Fatalf("queued signal: % x, %v; want % x", got, err, p)
			}
		}
		if want != nil { // the failed barrier completes on the next call
			go barrier()
			if err := engine.SendTag(ts[1], 0, engine.TagBarrier, sig); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("the barrier after a failed one: %v", err)
			}
		}
		ok = !t.Failed()
	})
}

// barrierSignals decodes the script into signals relative to epoch, and
// ends them with the right one.
func barrierSignals(script []byte, epoch uint64) [][]byte {
	var msgs [][]byte
	for len(script) >= 2 {
		class, arg := script[0], script[1]
		script = script[2:]
		p := binary.LittleEndian.AppendUint64(nil, epoch+uint64(int64(int8(arg))))
		switch class % 4 {
		case 1:
			p = p[:arg%8]
		case 2:
			p = append(p, make([]byte, 1+arg%8)...)
		case 3: // arg and the next 7 bytes
			k := min(7, len(script))
			p = append(append([]byte{arg}, script[:k]...), make([]byte, 7-k)...)
			script = script[k:]
		}
		msgs = append(msgs, p)
	}
	return append(msgs, binary.LittleEndian.AppendUint64(nil, epoch))
}

// barrierOutcome is what rank 0's barrier must do with msgs: the index
// of the signal that ends it, and the sentinel it fails with (nil: it
// completes).
func barrierOutcome(msgs [][]byte, epoch uint64) (int, error) {
	for i, p := range msgs {
		switch {
		case len(p) > 8:
			return i, engine.ErrTruncated
		case len(p) < 8:
			return i, engine.ErrLengthMismatch
		case binary.LittleEndian.Uint64(p) == epoch:
			return i, nil
		case binary.LittleEndian.Uint64(p) > epoch:
			return i, engine.ErrBarrierSkew
		}
	}
	panic("the script ends with the right epoch")
}

func checkBarrierErr(t *testing.T, p []byte, epoch uint64, err, want error) {
	t.Helper()
	var le *engine.LengthMismatchError
	switch {
	case want == nil && err != nil:
		t.Fatalf("barrier %d, signal % x: %v, want success", epoch, p, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("barrier %d, signal % x: %v, want %v", epoch, p, err, want)
	case errors.Is(want, engine.ErrLengthMismatch) && (!errors.As(err, &le) || le.Expected != 8 || le.Got != uint64(len(p))):
		t.Fatalf("barrier %d, signal % x: %v, want a LengthMismatchError of %d bytes", epoch, p, err, len(p))
	}
}
