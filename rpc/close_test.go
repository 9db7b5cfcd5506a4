package rpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/rpc"
)

// TestCloseWaitsForInFlight: Close lets running handlers finish and their
// callers get the replies; new calls are refused meanwhile.
func TestCloseWaitsForInFlight(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	started, release := make(chan struct{}, 4), make(chan struct{})
	as[1].Register("work", func(ctx context.Context, args []byte) ([]byte, error) {
		started <- struct{}{}
		<-release
		return args, nil
	})
	calls := make([]*rpc.Call, 4)
	for i := range calls {
		calls[i] = as[0].Go(context.Background(), 1, "work", []byte{byte(i)})
	}
	for range calls {
		<-started
	}
	closed := make(chan error, 1)
	go func() { closed <- as[1].Close(within(t, 10*time.Second)) }()
	waitFor(t, func() bool {
		_, err := as[0].Call(context.Background(), 1, "echo", nil)
		return errors.Is(err, rpc.ErrClosed)
	}, "rank 1 to refuse new calls")
	_, err := as[1].Call(context.Background(), 0, "echo", nil)
	wantCallError(t, err, rpc.ErrClosed, 0, "echo")
	close(release)
	for i, c := range calls {
		if got, err := c.Wait(); err != nil || got[0] != byte(i) {
			t.Fatalf("call %d: %v %v", i, got, err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	// The goodbye: rank 0 now refuses calls to rank 1 without sending.
	_, err = as[0].Call(context.Background(), 1, "echo", nil)
	wantCallError(t, err, rpc.ErrClosed, 1, "echo")
}

// TestCloseCutsShort: when Close's context ends first, running handlers
// are cancelled and every pending call fails with ErrClosed, on both
// sides.
func TestCloseCutsShort(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	handlerDone := make(chan error, 8)
	as[1].Register("stuck", func(ctx context.Context, _ []byte) ([]byte, error) {
		<-ctx.Done()
		handlerDone <- ctx.Err()
		return nil, ctx.Err()
	})
	remote := make([]*rpc.Call, 4)
	for i := range remote {
		remote[i] = as[0].Go(context.Background(), 1, "stuck", nil)
	}
	self := as[1].Go(context.Background(), 1, "sleep", nil)
	out := as[1].Go(context.Background(), 0, "sleep", nil) // rank 1's own call out
	waitFor(t, func() bool { return as[1].Stats().Running == 5 && as[0].Stats().Running == 1 }, "the handlers to start")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := as[1].Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want the context's error", err)
	}
	for i, c := range remote {
		_, err := c.Wait()
		wantCallError(t, err, rpc.ErrClosed, 1, "stuck")
		if herr := <-handlerDone; !errors.Is(herr, context.Canceled) {
			t.Fatalf("handler %d: context ended with %v", i, herr)
		}
	}
	for _, c := range []*rpc.Call{self, out} {
		if _, err := c.Wait(); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("rank 1's own call: %v, want ErrClosed", err)
		}
	}
	waitFor(t, func() bool { return as[0].Stats().Running == 0 }, "rank 0's handler to see the goodbye")
	if err := as[1].Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseCaller: closing the calling side fails its pending calls with
// ErrClosed; the server cancels their handlers.
func TestCloseCaller(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	c := as[0].Go(context.Background(), 1, "sleep", nil)
	waitFor(t, func() bool { return as[1].Stats().Running == 1 }, "the handler to start")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	as[0].Close(ctx)
	_, err := c.Wait()
	wantCallError(t, err, rpc.ErrClosed, 1, "sleep")
	waitFor(t, func() bool { return as[1].Stats().Running == 0 }, "the server to cancel the handler")
	if _, err := as[0].Call(context.Background(), 1, "echo", nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
}

// TestNewAgentAfterClose: a transport takes a new agent once the old one
// is closed, and peers talk to it.
func TestNewAgentAfterClose(t *testing.T) {
	ts := newMesh(t, 2)
	a0, err := rpc.NewAgent(ts[0], rpc.Options{Handlers: stdHandlers(0)})
	if err != nil {
		t.Fatal(err)
	}
	a1, err := rpc.NewAgent(ts[1], rpc.Options{Handlers: stdHandlers(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.NewAgent(ts[1], rpc.Options{}); !errors.Is(err, rpc.ErrAgentExists) {
		t.Fatalf("a second agent on one transport: %v, want ErrAgentExists", err)
	}
	mustCall(t, a0, 1, "echo", nil)
	if err := a1.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := a0.Call(context.Background(), 1, "echo", nil)
		return errors.Is(err, rpc.ErrClosed)
	}, "the goodbye")
	a1, err = rpc.NewAgent(ts[1], rpc.Options{Handlers: stdHandlers(1)})
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, a1, 0, "echo", nil) // rank 0 learns that rank 1 is back
	mustCall(t, a0, 1, "echo", nil)
	closeAll(t, []*rpc.Agent{a0, a1})
}
