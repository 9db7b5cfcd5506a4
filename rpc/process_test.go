package rpc_test

import (
	"context"
	"errors"
	"github.com/boltmesh/boltmesh/internal/childproc"
	"net"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/rpc"
)

// childLife bounds how long a child serves if nobody kills it.
const childLife = time.Minute

// runChild runs the role of a child process (see startChild).
func runChild(c childproc.Child) error {
	role, rank, addrs, ln := c.Role, c.Rank, c.Addrs, c.Listener
	t, err := engine.FromListener(rank, len(addrs), ln, addrs, engine.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	switch role {
	case "serve": // serves the standard functions until killed
		if _, err := rpc.NewAgent(t, rpc.Options{Handlers: stdHandlers(rank)}); err != nil {
			return err
		}
		time.Sleep(childLife)
		return nil
	}
	return errors.New("unknown role " + role)
}

// startChild runs rank as a child process with the given role; ln is
// passed down (and closed here) unless nil. The child is killed and reaped
// at cleanup if still running.
func startChild(t testing.TB, role string, rank int, ln net.Listener, addrs []string) *childproc.Proc {
	t.Helper()
	return childproc.Start(t, childproc.Spec{Role: role, Rank: rank, Addrs: addrs, Listener: ln})
}

// lostWithin is how promptly a killed peer must fail the calls pending on
// it.
const lostWithin = 5 * time.Second

// TestPeerKilledMidCall kills the process serving calls in flight: each
// fails with ErrPeerLost within seconds, and later calls to it fail too.
func TestPeerKilledMidCall(t *testing.T) {
	lns, addrs := listeners(t, 2)
	child := startChild(t, "serve", 1, lns[1], addrs)
	tr, err := engine.FromListener(0, 2, lns[0], addrs, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	a, err := rpc.NewAgent(tr, rpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	wantEcho(t, mustCall(t, a, 1, "echo", []byte("ping")), []byte("ping"))

	calls := make([]*rpc.Call, 32)
	for i := range calls {
		calls[i] = a.Go(context.Background(), 1, "sleep", nil)
	}
	go func() { // and one synchronous caller
		a.Call(context.Background(), 1, "sleep", nil)
	}()
	time.Sleep(50 * time.Millisecond) // let the requests reach the child
	killed := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		select {
		case <-c.Done():
		case <-time.After(lostWithin - time.Since(killed)):
			t.Fatalf("call %d still pending %v after the peer was killed", i, lostWithin)
		}
		_, err := c.Wait()
		wantCallError(t, err, rpc.ErrPeerLost, 1, "sleep")
		var pe *engine.PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 {
			t.Fatalf("call %d: %v: want the transport's *engine.PeerError as the cause", i, err)
		}
	}
	t.Logf("every call failed %v after the kill", time.Since(killed))
	_, err = a.Call(context.Background(), 1, "echo", nil)
	wantCallError(t, err, rpc.ErrPeerLost, 1, "echo")
	if s := a.Stats(); s.InFlight != 0 {
		t.Fatalf("%d calls still in flight", s.InFlight)
	}
}
