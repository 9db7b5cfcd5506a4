package engine_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// heapInuse returns HeapInuse after collecting garbage (twice, so that
// sync.Pool victim caches are emptied too).
func heapInuse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func TestBackpressure(t *testing.T) {
	const (
		limit   = 1 << 20  // receiver's MaxQueuedBytes
		size    = 64 << 10 // message size: eager (at most a quarter of the window)
		tag     = 3
		maxSent = 2048 // 128 MiB: far beyond socket buffers plus limit
	)
	ts := watchedMesh(t, 2, engine.Options{MaxQueuedBytes: limit})
	buf := make([]byte, size)
	before := heapInuse()

	// Flood rank 1, which does not receive, until a send is held back.
	// Sends that return nil are committed (SendContext may finish a
	// started frame in the background); one that returns the context's
	// error is dropped.
	sent := 0
	for {
		if sent == maxSent {
			t.Fatalf("%d messages (%d MiB) sent to a receiver that does not receive: no backpressure", sent, sent*size>>20)
		}
		fillPattern(buf, 0, 1, tag, sent)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := ts[0].SendContext(ctx, 1, tag, buf)
		cancel()
		if err == nil {
			sent++
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("send %d: %v", sent, err)
		}
		break
	}

	// The sender stays held back: a send with a 1 s deadline gives up.
	fillPattern(buf, 0, 1, tag, sent)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := ts[0].SendContext(ctx, 1, tag, buf)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send while held back: got %v, want context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el < time.Second || el > 3*time.Second {
		t.Errorf("send while held back gave up after %v, want 1s", el)
	}

	// What the flood costs in memory is bounded by the receiver's limit
	// (plus a message or two in flight), not by what was sent; the rest
	// waits in the kernel's socket buffers.
	growth := heapInuse() - before
	flooded := int64(sent) * size
	t.Logf("%d messages (%d KiB) committed; heap grew by %d KiB", sent, flooded>>10, growth>>10)
	if bound := int64(limit + 4*size + 2<<20); growth > bound {
		t.Errorf("heap grew by %d KiB while flooding, want at most %d KiB", growth>>10, bound>>10)
	}

	// The receiver drains every committed message, intact and in order;
	// the dropped ones never arrive.
	for seq := range sent {
		got, err := ts[1].RecvTimeout(0, tag, 5*time.Second)
		if err != nil {
			t.Fatalf("drain message %d of %d: %v", seq, sent, err)
		}
		if err := check(got, 0, 1, tag, seq, size); err != nil {
			t.Fatalf("drain: %v", err)
		}
	}
	if got, err := ts[1].RecvTimeout(0, tag, 100*time.Millisecond); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("after draining %d messages: got %d bytes, %v; want ErrTimeout", sent, len(got), err)
	}

	// The sender is no longer held back.
	fillPattern(buf, 0, 1, tag, sent)
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ts[0].SendContext(ctx, 1, tag, buf); err != nil {
		t.Fatalf("send after draining: %v", err)
	}
	got, err := ts[1].RecvTimeout(0, tag, 5*time.Second)
	if err != nil || check(got, 0, 1, tag, sent, size) != nil {
		t.Fatalf("message after draining: %d bytes, %v", len(got), err)
	}
}
