package rpc_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/rpc"
)

func TestRegister(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	h := func(context.Context, []byte) ([]byte, error) { return []byte("v1"), nil }
	h2 := func(context.Context, []byte) ([]byte, error) { return []byte("v2"), nil }
	for _, tc := range []struct {
		name string
		h    rpc.Handler
		want error
	}{
		{"f", h, nil},
		{"f", h, rpc.ErrExists},
		{"", h, rpc.ErrBadName},
		{strings.Repeat("x", rpc.MaxNameLen+1), h, rpc.ErrBadName},
		{strings.Repeat("x", rpc.MaxNameLen), h, nil},
		{"g", nil, rpc.ErrNilHandler},
	} {
		if err := as[1].Register(tc.name, tc.h); !errors.Is(err, tc.want) {
			t.Errorf("Register(%.10q): %v, want %v", tc.name, err, tc.want)
		}
	}
	wantEcho(t, mustCall(t, as[0], 1, "f", nil), []byte("v1"))
	wantEcho(t, mustCall(t, as[0], 1, strings.Repeat("x", rpc.MaxNameLen), nil), []byte("v1"))
	if err := as[1].Replace("f", h2); err != nil {
		t.Fatal(err)
	}
	wantEcho(t, mustCall(t, as[0], 1, "f", nil), []byte("v2"))
	if !as[1].Unregister("f") || as[1].Unregister("f") {
		t.Fatal("Unregister did not report what it removed")
	}
	_, err := as[0].Call(context.Background(), 1, "f", nil)
	wantCallError(t, err, rpc.ErrFunctionNotFound, 1, "f")
	if err := as[1].Replace("f", h); err != nil { // Replace registers, too
		t.Fatal(err)
	}
	wantEcho(t, mustCall(t, as[0], 1, "f", nil), []byte("v1"))
	if _, err := rpc.NewAgent(newMesh(t, 1)[0], rpc.Options{Handlers: map[string]rpc.Handler{"": h}}); !errors.Is(err, rpc.ErrBadName) {
		t.Fatalf("NewAgent with a bad handler name: %v", err)
	}
}

func TestCallArguments(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	for _, tc := range []struct {
		dst  int
		name string
	}{{-1, "echo"}, {2, "echo"}, {1, ""}} {
		_, err := as[0].Call(context.Background(), tc.dst, tc.name, nil)
		var ce *rpc.CallError
		if err == nil || !errors.As(err, &ce) {
			t.Errorf("Call(%d, %q): %v, want a *CallError", tc.dst, tc.name, err)
		}
	}
	// Empty arguments and empty replies are fine.
	if got := mustCall(t, as[0], 1, "echo", nil); len(got) != 0 {
		t.Fatalf("echo of nothing: %v", got)
	}
}

func TestSizeLimits(t *testing.T) {
	ts := newMesh(t, 2)
	const limit = 1 << 10
	small, err := rpc.NewAgent(ts[0], rpc.Options{MaxRequestSize: 4 * limit, MaxReplySize: limit, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	big, err := rpc.NewAgent(ts[1], rpc.Options{MaxRequestSize: limit, MaxReplySize: 4 * limit, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(t, []*rpc.Agent{small, big})
	for _, a := range []*rpc.Agent{small, big} {
		serveStd(t, a)
		a.Register("grow", func(_ context.Context, args []byte) ([]byte, error) {
			return make([]byte, 2*limit), nil
		})
	}
	for _, tc := range []struct {
		from *rpc.Agent
		dst  int
		name string
		args int
		what string
	}{
		{small, 1, "echo", 2 * limit, "request"}, // refused by rank 1 on arrival
		{big, 0, "echo", 2 * limit, "request"},   // refused by rank 1 before sending
		{small, 1, "grow", 0, "reply"},           // refused by rank 0 on arrival
		{big, 0, "grow", 0, "reply"},             // refused by rank 0 before replying
		{small, 0, "grow", 0, "reply"},           // to itself
	} {
		_, err := tc.from.Call(context.Background(), tc.dst, tc.name, make([]byte, tc.args))
		var se *rpc.SizeError
		if !errors.Is(err, rpc.ErrTooLarge) || !errors.As(err, &se) || se.What != tc.what {
			t.Errorf("rank %d calls %q on rank %d: %v, want a %s *SizeError", tc.from.Rank(), tc.name, tc.dst, err, tc.what)
		}
	}
	mustCall(t, small, 1, "echo", make([]byte, limit-len("echo")))
}

func TestOptions(t *testing.T) {
	for _, field := range []string{"Workers", "QueueLen", "DefaultTimeout", "MaxRequestSize", "MaxReplySize"} {
		var o rpc.Options
		switch field {
		case "Workers":
			o.Workers = -1
		case "QueueLen":
			o.QueueLen = -1
		case "DefaultTimeout":
			o.DefaultTimeout = -1
		case "MaxRequestSize":
			o.MaxRequestSize = -1
		case "MaxReplySize":
			o.MaxReplySize = -1
		}
		_, err := rpc.NewAgent(nil, o)
		var oe *engine.OptionError
		if !errors.Is(err, rpc.ErrOptions) || !errors.As(err, &oe) || oe.Field != field {
			t.Errorf("negative %s: %v", field, err)
		}
	}
}

func TestStats(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	mustCall(t, as[0], 1, "echo", nil)
	as[0].Call(context.Background(), 1, "fail", nil)
	as[0].Call(context.Background(), 1, "nope", nil)
	if s := as[0].Stats(); s.Calls != 3 || s.CallErrors != 2 || s.InFlight != 0 {
		t.Fatalf("caller %+v", s)
	}
	if s := as[1].Stats(); s.Requests != 3 || s.RequestErrors != 2 || s.Running != 0 || s.Queued != 0 {
		t.Fatalf("server %+v", s)
	}
}

// TestTransportRequestLimit: with the default MaxRequestSize (64 MiB), a
// request to another rank is bounded by what that rank's transport holds
// (16 MiB with the default window), and that is the limit enforced and
// reported: a request of exactly it is served, one byte more fails before
// sending with a *SizeError naming it, on the direct path and on the
// batched one. Before, the caller sent the request whole, the server
// discarded it unread, and the *SizeError reported 64 MiB.
func TestTransportRequestLimit(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{Logger: quiet})
	defer closeAll(t, as)
	const want = 16 << 20
	name := "echo"
	got := mustCall(t, as[0], 1, name, make([]byte, want-len(name)))
	if len(got) != want-len(name) {
		t.Fatalf("echo of the largest request: %d bytes back", len(got))
	}
	var served atomic.Int64
	as[1].Register("count", func(_ context.Context, args []byte) ([]byte, error) {
		served.Add(1)
		return nil, nil
	})
	for _, size := range []int{want + 1, 20 << 20} {
		_, err := as[0].Call(context.Background(), 1, "count", make([]byte, size-len("count")))
		var se *rpc.SizeError
		if !errors.As(err, &se) || !errors.Is(err, rpc.ErrTooLarge) || se.What != "request" || se.Limit != want || se.Size != size {
			t.Errorf("a request of %d bytes: %v, want a request *SizeError of %d bytes, limit %d", size, err, size, want)
		}
	}
	mustCall(t, as[0], 1, "count", nil)
	if n := served.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
}
