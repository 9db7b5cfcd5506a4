package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/rpc"
)

// TestNewAgentAfterGoodbye: agents closed and made again on the same
// transports answer each other, and agree on a Shutdown. Each round rank
// 0's agent closes first, so rank 1's goodbye reaches rank 0 while it has
// no agent and is handed to its next one: that agent takes rank 1 for
// gone only until the HELLO of rank 1's next agent, which follows the
// goodbye on the same connection. (Before HELLO it did so until rank 1
// happened to call it, and its Shutdown failed.)
func TestNewAgentAfterGoodbye(t *testing.T) {
	ts := newMesh(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 3 {
		as := make([]*rpc.Agent, 2)
		for _, r := range []int{1, 0} {
			a, err := rpc.NewAgent(ts[r], rpc.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			serveStd(t, a)
			as[r] = a
		}
		for _, c := range [][2]int{{0, 1}, {1, 0}} {
			want := []byte{byte(round), byte(c[0])}
			waitFor(t, func() bool {
				got, err := as[c[0]].Call(ctx, c[1], "echo", want)
				if err != nil && !errors.Is(err, rpc.ErrClosed) || err == nil && !bytes.Equal(got, want) {
					t.Fatalf("round %d: rank %d calls rank %d: %q, %v", round, c[0], c[1], got, err)
				}
				return err == nil
			}, "rank "+string(rune('0'+c[0]))+"'s agent to call rank "+string(rune('0'+c[1]))+"'s new one")
		}
		if round == 2 {
			done := make(chan error, 2)
			for _, a := range as {
				go func() { done <- a.Shutdown(ctx) }()
			}
			for range as {
				if err := <-done; err != nil {
					t.Fatalf("round %d: Shutdown: %v", round, err)
				}
			}
			return
		}
		for _, r := range []int{0, 1} {
			if err := as[r].Close(ctx); err != nil {
				t.Fatalf("round %d: rank %d: Close: %v", round, r, err)
			}
		}
	}
}
