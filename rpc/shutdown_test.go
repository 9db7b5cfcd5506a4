package rpc_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/rpc"
)

// TestShutdown: every rank calls Shutdown while calls (and the nested
// calls their handlers make) are in flight. Shutdown returns on every rank
// only when all of them are done, and they all succeed.
func TestShutdown(t *testing.T) {
	const n = 3
	as := newAgents(t, n, rpc.Options{Workers: 2})
	for _, a := range as {
		a.Register("relay", func(ctx context.Context, args []byte) ([]byte, error) {
			time.Sleep(time.Duration(args[0]) * time.Millisecond)
			if args[0] == 0 {
				return []byte{byte(a.Rank())}, nil
			}
			return a.Call(ctx, (a.Rank()+1)%n, "relay", []byte{args[0] - 1})
		})
	}
	var calls []*rpc.Call
	for _, a := range as {
		for i := range 6 {
			calls = append(calls, a.Go(context.Background(), (a.Rank()+1+i)%n, "relay", []byte{byte(5 + 3*i)}))
		}
	}
	errs := make([]error, n)
	returned := make([]time.Time, n)
	var wg sync.WaitGroup
	for r, a := range as {
		wg.Go(func() {
			errs[r] = a.Shutdown(within(t, 20*time.Second))
			returned[r] = time.Now()
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: Shutdown: %v", r, err)
		}
	}
	for i, c := range calls {
		select {
		case <-c.Done():
		default:
			t.Fatalf("call %d still pending after Shutdown", i)
		}
		if _, err := c.Wait(); err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	for _, a := range as {
		if _, err := a.Call(context.Background(), 0, "echo", nil); !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("rank %d: call after Shutdown: %v", a.Rank(), err)
		}
	}
}

// TestShutdownRefusesNewCalls: once a rank is in Shutdown, calls from
// outside handlers are refused, and Shutdown fails with the context when
// another rank never joins.
func TestShutdownRefusesNewCalls(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	done := make(chan error, 1)
	go func() { done <- as[1].Shutdown(within(t, 200*time.Millisecond)) }()
	waitFor(t, func() bool {
		_, err := as[1].Call(context.Background(), 0, "echo", nil)
		return errors.Is(err, rpc.ErrClosed)
	}, "Shutdown to refuse calls")
	mustCall(t, as[0], 1, "echo", nil) // still serving
	if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown without rank 0: %v", err)
	}
}

// TestShutdownAlone: a world of one.
func TestShutdownAlone(t *testing.T) {
	as := newAgents(t, 1, rpc.Options{})
	mustCall(t, as[0], 0, "echo", nil)
	if err := as[0].Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
