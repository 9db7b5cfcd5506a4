package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/rpc"
)

// listeners opens n loopback listeners on ephemeral ports.
func listeners(t testing.TB, n int) ([]net.Listener, []string) { return meshtest.Listeners(t, n) }

// newMesh builds an n-rank mesh in this process and closes it at cleanup.
func newMesh(t testing.TB, n int) []*engine.NetTransport {
	return meshtest.Mesh(t, n, engine.Options{})
}

// newAgents builds an n-rank mesh with one agent per rank, each serving
// the standard functions (see serveStd). Agents close (then transports)
// at cleanup.
func newAgents(t testing.TB, n int, opts rpc.Options) []*rpc.Agent {
	t.Helper()
	return agentsOn(t, newMesh(t, n), opts)
}

// agentsOn starts one agent per transport of ts, as newAgents does.
func agentsOn(t testing.TB, ts []*engine.NetTransport, opts rpc.Options) []*rpc.Agent {
	t.Helper()
	n := len(ts)
	if opts.Logger == nil {
		opts.Logger = quiet // panics are tested on purpose
	}
	as := make([]*rpc.Agent, n)
	for r, tr := range ts {
		a, err := rpc.NewAgent(tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		serveStd(t, a)
		as[r] = a
	}
	t.Cleanup(func() { closeAll(t, as) })
	return as
}

var quiet = slog.New(slog.DiscardHandler)

// closeAll closes every agent and fails on an error.
func closeAll(t testing.TB, as []*rpc.Agent) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, a := range as {
		if err := a.Close(ctx); err != nil {
			t.Errorf("rank %d: Close: %v", a.Rank(), err)
		}
	}
}

// errBoom is what the "fail" handler returns.
var errBoom = errors.New("boom")

// serveStd registers the functions most tests use (see stdHandlers).
func serveStd(t testing.TB, a *rpc.Agent) {
	t.Helper()
	for name, h := range stdHandlers(a.Rank()) {
		if err := a.Register(name, h); err != nil {
			t.Fatal(err)
		}
	}
}

// stdHandlers are the functions most tests use, for rank:
//   - echo: returns its arguments;
//   - whoami: returns the serving rank as one byte;
//   - fail: returns errBoom;
//   - panic: panics;
//   - sleep: waits until its context ends and returns its error.
func stdHandlers(rank int) map[string]rpc.Handler {
	return map[string]rpc.Handler{
		"echo":   func(_ context.Context, args []byte) ([]byte, error) { return args, nil },
		"whoami": func(context.Context, []byte) ([]byte, error) { return []byte{byte(rank)}, nil },
		"fail":   func(context.Context, []byte) ([]byte, error) { return nil, errBoom },
		"panic":  func(context.Context, []byte) ([]byte, error) { panic("handler exploded") },
		"sleep": func(ctx context.Context, _ []byte) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
}

// within returns a context that ends after d, cancelled at cleanup.
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// mustCall calls and fails the test on an error.
func mustCall(t testing.TB, a *rpc.Agent, dst int, name string, args []byte) []byte {
	t.Helper()
	got, err := a.Call(within(t, 10*time.Second), dst, name, args)
	if err != nil {
		t.Fatalf("call %q on rank %d: %v", name, dst, err)
	}
	return got
}

// wantEcho fails unless got equals want.
func wantEcho(t testing.TB, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes %.16x, want %d bytes %.16x", len(got), got, len(want), want)
	}
}

// wantCallError fails unless err is a *CallError for (rank, name) that
// matches target.
func wantCallError(t testing.TB, err, target error, rank int, name string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v does not match %v", err, target)
	}
	var ce *rpc.CallError
	if !errors.As(err, &ce) || ce.Rank != rank || ce.Name != name {
		t.Fatalf("error %v (%T): want a *CallError for %q on rank %d", err, err, name, rank)
	}
}

// payload returns n bytes that depend on seed.
func payload(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*131 + i*7 + i>>8)
	}
	return b
}
