package rpc_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/rpc"
)

// Child processes: the test binary re-executes itself with these variables
// set, and TestMain runs the role instead of the tests. The child's
// listener, if any, is inherited as fd 3.
const (
	childRoleEnv     = "BOLTMESH_RPC_TEST_ROLE"
	childRankEnv     = "BOLTMESH_RPC_TEST_RANK"
	childAddrsEnv    = "BOLTMESH_RPC_TEST_ADDRS"
	childListenerEnv = "BOLTMESH_RPC_TEST_LISTENER"
)

// childLife bounds how long a child serves if nobody kills it.
const childLife = time.Minute

func runChild(role string) error {
	rank, err := strconv.Atoi(os.Getenv(childRankEnv))
	if err != nil {
		return err
	}
	addrs := strings.Split(os.Getenv(childAddrsEnv), ",")
	var ln net.Listener
	if os.Getenv(childListenerEnv) != "" {
		if ln, err = net.FileListener(os.NewFile(3, "listener")); err != nil {
			return err
		}
	}
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
func startChild(t testing.TB, role string, rank int, ln net.Listener, addrs []string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childRankEnv+"="+strconv.Itoa(rank), childAddrsEnv+"="+strings.Join(addrs, ","))
	if ln != nil {
		f, err := ln.(*net.TCPListener).File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ln.Close()
		cmd.ExtraFiles = []*os.File{f}
		cmd.Env = append(cmd.Env, childListenerEnv+"=1")
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
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
