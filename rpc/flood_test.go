package rpc_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boltmesh/boltmesh/rpc"
)

// TestFloodBusy: far more calls than the queue holds. The overflow is
// answered with ErrBusy at once, the queue never exceeds its bound, and the
// accepted calls complete once the handler is released.
func TestFloodBusy(t *testing.T) {
	const workers, queue, n = 1, 4, 2000
	as := newAgents(t, 2, rpc.Options{Workers: workers, QueueLen: queue})
	gate := make(chan struct{})
	as[1].Register("gated", func(ctx context.Context, _ []byte) ([]byte, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return []byte("ok"), nil
	})
	var maxQueued atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() { // watch the server's queue while the flood lasts
		defer close(watched)
		for {
			if q := int64(as[1].Stats().Queued); q > maxQueued.Load() {
				maxQueued.Store(q)
			}
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	before := runtime.NumGoroutine()
	calls := make([]*rpc.Call, n)
	args := make([]byte, 1024)
	for i := range calls {
		calls[i] = as[0].Go(context.Background(), 1, "gated", args)
	}
	waitFor(t, func() bool { return as[0].Stats().InFlight <= workers+queue }, "the refusals")
	goroutines := runtime.NumGoroutine()
	close(stop)
	<-watched
	release := sync.OnceFunc(func() { close(gate) })
	defer release() // on failure too: Close waits for the handlers
	if s := as[1].Stats(); s.Busy < n-workers-queue || s.Running != workers || s.Queued != queue {
		t.Fatalf("server stats during the flood %+v", s)
	}
	if m := maxQueued.Load(); m > queue {
		t.Fatalf("the queue held %d requests, bound %d", m, queue)
	}
	if goroutines > before+8 {
		t.Fatalf("%d goroutines during the flood, %d before", goroutines, before)
	}
	release()
	ok := 0
	for _, c := range calls {
		got, err := c.Wait()
		switch {
		case err == nil && string(got) == "ok":
			ok++
		case !errors.Is(err, rpc.ErrBusy):
			t.Fatalf("call: %v", err)
		}
	}
	if ok < workers || ok > workers+queue {
		t.Fatalf("%d calls served, want %d to %d", ok, workers, workers+queue)
	}
	if s := as[1].Stats(); s.Busy != uint64(n-ok) {
		t.Fatalf("server stats %+v, want %d busy", s, n-ok)
	}
}
