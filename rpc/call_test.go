package rpc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/rpc"
)

// TestConcurrentCallers: 64 goroutines call one peer at once; every reply
// matches its own call.
func TestConcurrentCallers(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	const callers, calls = 64, 40
	var wg sync.WaitGroup
	errc := make(chan error, callers)
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				args := payload(g*calls+i, 1+(g*calls+i)%3000)
				got, err := as[0].Call(context.Background(), 1, "echo", args)
				if err == nil && string(got) != string(args) {
					err = fmt.Errorf("caller %d call %d: reply does not match", g, i)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if s := as[0].Stats(); s.Calls != callers*calls || s.CallErrors != 0 || s.InFlight != 0 {
		t.Fatalf("caller stats %+v", s)
	}
	if s := as[1].Stats(); s.Requests != callers*calls || s.RequestErrors != 0 {
		t.Fatalf("server stats %+v", s)
	}
}

// TestCallEachOther: two ranks call each other at the same time while
// serving; requests and replies never get confused.
func TestCallEachOther(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{Workers: 2})
	var wg sync.WaitGroup
	errc := make(chan error, 32)
	for r, a := range as {
		for g := range 16 {
			wg.Go(func() {
				for i := range 30 {
					args := payload(r<<16|g<<8|i, 64+i)
					got, err := a.Call(context.Background(), 1-r, "echo", args)
					if err == nil && string(got) != string(args) {
						err = fmt.Errorf("rank %d caller %d: reply does not match", r, g)
					}
					if who, err2 := a.Call(context.Background(), 1-r, "whoami", nil); err2 != nil || who[0] != byte(1-r) {
						err = fmt.Errorf("rank %d: whoami: %v %v", r, who, err2)
					}
					if err != nil {
						errc <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestGoThousands keeps thousands of calls in flight without a goroutine
// per call.
func TestGoThousands(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{Workers: 1, QueueLen: 8192})
	gate := make(chan struct{})
	as[1].Register("gated", func(ctx context.Context, args []byte) ([]byte, error) {
		<-gate
		return args, nil
	})
	before := runtime.NumGoroutine()
	const n = 5000
	calls := make([]*rpc.Call, n)
	for i := range calls {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		calls[i] = as[0].Go(context.Background(), 1, "gated", b[:])
	}
	waitFor(t, func() bool { return as[1].Stats().Requests == n }, "every request to arrive")
	if s := as[0].Stats(); s.InFlight != n {
		t.Fatalf("%d calls in flight, want %d", s.InFlight, n)
	}
	if g := runtime.NumGoroutine(); g > before+16 {
		t.Fatalf("%d goroutines with %d calls in flight, %d before", g, n, before)
	}
	close(gate)
	for i, c := range calls {
		got, err := c.Wait()
		if err != nil || binary.LittleEndian.Uint64(got) != uint64(i) {
			t.Fatalf("call %d: %x %v", i, got, err)
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCallSelf: calls to this rank work and fail as remote ones do.
func TestCallSelf(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	args := []byte("to myself")
	got := mustCall(t, as[0], 0, "echo", args)
	wantEcho(t, got, args)
	got[0] = 'X' // the reply is the caller's own copy
	if args[0] != 't' {
		t.Fatal("the reply aliases the arguments")
	}
	_, err := as[0].Call(context.Background(), 0, "nope", nil)
	wantCallError(t, err, rpc.ErrFunctionNotFound, 0, "nope")
	_, err = as[0].Call(context.Background(), 0, "fail", nil)
	var re *rpc.HandlerError
	if !errors.As(err, &re) || re.Message != errBoom.Error() || re.Rank != 0 {
		t.Fatalf("self call of fail: %v", err)
	}
	c := as[0].Go(context.Background(), 0, "whoami", nil)
	if got, err := c.Wait(); err != nil || got[0] != 0 {
		t.Fatalf("Go to self: %v %v", got, err)
	}
}

// TestFunctionNotFound: an unknown name fails with ErrFunctionNotFound,
// naming the function and the rank.
func TestFunctionNotFound(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	_, err := as[0].Call(context.Background(), 1, "missing", []byte("x"))
	wantCallError(t, err, rpc.ErrFunctionNotFound, 1, "missing")
	// The message says "rpc:" once.
	if got, want := err.Error(), `rpc: call "missing" on rank 1: function not found`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	mustCall(t, as[0], 1, "echo", nil) // the server is fine
}

// TestHandlerError: a handler's error reaches the caller as a
// *HandlerError with its message.
func TestHandlerError(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	_, err := as[0].Call(context.Background(), 1, "fail", nil)
	var re *rpc.HandlerError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T): want *HandlerError", err, err)
	}
	if re.Message != errBoom.Error() || re.Rank != 1 || re.Name != "fail" || re.Panicked {
		t.Fatalf("HandlerError %+v", re)
	}
}

// TestHandlerPanic: a panic is reported as such and the server keeps
// serving.
func TestHandlerPanic(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{Workers: 1})
	for range 3 {
		_, err := as[0].Call(context.Background(), 1, "panic", nil)
		var re *rpc.HandlerError
		if !errors.As(err, &re) || !re.Panicked || re.Message != "handler exploded" {
			t.Fatalf("error %v: want a *HandlerError that says the handler panicked", err)
		}
		wantEcho(t, mustCall(t, as[0], 1, "echo", []byte("after")), []byte("after"))
	}
}

// TestDeadline: a slow handler makes the caller fail with
// context.DeadlineExceeded at its deadline, and the handler's context ends.
func TestDeadline(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	seen := make(chan error, 1)
	as[1].Register("slow", func(ctx context.Context, _ []byte) ([]byte, error) {
		<-ctx.Done()
		seen <- ctx.Err()
		return []byte("too late"), nil
	})
	const d = 100 * time.Millisecond
	start := time.Now() // before the deadline is set: it runs from here
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := as[0].Call(ctx, 1, "slow", nil)
	took := time.Since(start)
	wantCallError(t, err, context.DeadlineExceeded, 1, "slow")
	if took < d || took > d+time.Second {
		t.Fatalf("call failed after %v, deadline %v", took, d)
	}
	select {
	case herr := <-seen:
		if !errors.Is(herr, context.DeadlineExceeded) {
			t.Fatalf("handler's context ended with %v", herr)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
	// Go, and a call to this rank, behave the same.
	ctx2, cancel2 := context.WithTimeout(context.Background(), d)
	defer cancel2()
	_, err = as[0].Go(ctx2, 1, "sleep", nil).Wait()
	wantCallError(t, err, context.DeadlineExceeded, 1, "sleep")
	_, err = as[1].Call(within(t, d), 1, "slow", nil)
	wantCallError(t, err, context.DeadlineExceeded, 1, "slow")
	<-seen
}

// TestDefaultTimeout: a context without deadline gets
// Options.DefaultTimeout.
func TestDefaultTimeout(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{DefaultTimeout: 50 * time.Millisecond})
	_, err := as[0].Call(context.Background(), 1, "sleep", nil)
	wantCallError(t, err, context.DeadlineExceeded, 1, "sleep")
	_, err = as[0].Go(context.Background(), 1, "sleep", nil).Wait()
	wantCallError(t, err, context.DeadlineExceeded, 1, "sleep")
	waitFor(t, func() bool { return as[1].Stats().Running == 0 }, "the handlers to see their deadline")
}

// TestCancel: cancelling the caller's context fails the call with
// context.Canceled, and cancels the handler's context at the server.
func TestCancel(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{})
	seen := make(chan error, 2)
	as[1].Register("wait", func(ctx context.Context, _ []byte) ([]byte, error) {
		<-ctx.Done()
		seen <- ctx.Err()
		return nil, ctx.Err()
	})
	for _, async := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		var err error
		if async {
			_, err = as[0].Go(ctx, 1, "wait", nil).Wait()
		} else {
			_, err = as[0].Call(ctx, 1, "wait", nil)
		}
		wantCallError(t, err, context.Canceled, 1, "wait")
		select {
		case herr := <-seen:
			if !errors.Is(herr, context.Canceled) {
				t.Fatalf("handler's context ended with %v", herr)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the handler was not cancelled")
		}
	}
}
