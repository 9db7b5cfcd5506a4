package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// rpcRecorder is an plumb.ServiceHandler that records frames in order and
// checks that it is never called concurrently for one peer.
type rpcRecorder struct {
	mu      sync.Mutex
	frames  []plumb.ServiceFrame
	data    []string
	lost    map[int]error
	inside  atomic.Int32
	overlap atomic.Bool
}

func (r *rpcRecorder) HandleFrame(from int, f plumb.ServiceFrame, p plumb.ServicePayload) {
	if r.inside.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.inside.Add(-1)
	r.mu.Lock()
	r.frames = append(r.frames, f)
	r.data = append(r.data, string(p.Bytes()))
	r.mu.Unlock()
	p.Release()
}

func (r *rpcRecorder) ServicePeerLost(from int, err error) {
	r.mu.Lock()
	if r.lost == nil {
		r.lost = map[int]error{}
	}
	r.lost[from] = err
	r.mu.Unlock()
}

func (r *rpcRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}

func waitUntil(t testing.TB, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRPCFramesEarlyAndInOrder: frames sent before the handler is
// installed are handed over on install, in order, never two at once, and
// before the frames that follow; SendFrame and PostFrame carry every field.
func TestRPCFramesEarlyAndInOrder(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{})
	const early, late = 200, 200
	ctx := context.Background()
	for i := range early {
		f := plumb.ServiceFrame{ID: uint64(i), Tag: uint32(i), Aux: uint32(i) * 3}
		if err := hooks(ts[0]).SendFrame(ctx, 1, f, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	sent := make(chan error, 1)
	go func() {
		for i := early; i < early+late; i++ {
			f := plumb.ServiceFrame{ID: uint64(i), Tag: uint32(i), Aux: uint32(i) * 3}
			if err := hooks(ts[0]).PostFrame(1, f, []byte{byte(i)}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	time.Sleep(10 * time.Millisecond) // let early frames arrive before the handler
	rec := &rpcRecorder{}
	if err := hooks(ts[1]).SetServiceHandler(rec); err != nil {
		t.Fatal(err)
	}
	if err := hooks(ts[1]).SetServiceHandler(&rpcRecorder{}); !errors.Is(err, plumb.ErrHandlerSet) {
		t.Fatalf("second handler: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return rec.count() == early+late }, "every frame")
	if rec.overlap.Load() {
		t.Fatal("HandleFrame was called concurrently")
	}
	for i, f := range rec.frames {
		want := plumb.ServiceFrame{ID: uint64(i), Tag: uint32(i), Aux: uint32(i) * 3}
		if f != want || rec.data[i] != string([]byte{byte(i)}) {
			t.Fatalf("frame %d: %+v %q, want %+v", i, f, rec.data[i], want)
		}
	}
	if err := hooks(ts[0]).SendFrame(ctx, 0, plumb.ServiceFrame{}, nil); !errors.Is(err, plumb.ErrSelfFrame) {
		t.Fatalf("SendFrame to itself: %v", err)
	}
	if err := hooks(ts[0]).PostFrame(2, plumb.ServiceFrame{}, nil); !errors.Is(err, engine.ErrUnknownRank) {
		t.Fatalf("PostFrame to rank 2: %v", err)
	}
	if err := hooks(ts[1]).SetServiceHandler(nil); err != nil {
		t.Fatal(err)
	}
	if err := hooks(ts[1]).SetServiceHandler(rec); err != nil {
		t.Fatalf("handler after uninstall: %v", err)
	}
}

// TestRPCPeerLost: closing a peer reports it to the handler, wrapping
// ErrPeerLost; closing the transport reports ErrClosed.
func TestRPCPeerLost(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{})
	rec := &rpcRecorder{}
	if err := hooks(ts[1]).SetServiceHandler(rec); err != nil {
		t.Fatal(err)
	}
	ts[0].Close()
	lost := func() error {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.lost[0]
	}
	waitUntil(t, func() bool { return lost() != nil }, "ServicePeerLost")
	if err := lost(); !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("ServicePeerLost: %v", err)
	}
	if err := hooks(ts[1]).SendFrame(context.Background(), 0, plumb.ServiceFrame{}, nil); !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("SendFrame to a lost peer: %v", err)
	}
}
