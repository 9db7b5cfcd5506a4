package rpc_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/rpc"
)

// bounce registers "bounce" on every agent: with n > 0 it calls "bounce"
// with n-1 on the next rank (itself in a world of one, or when self is
// set), else it returns the path so far. args: n (1 byte), self (1 byte),
// then the ranks visited.
func bounce(t testing.TB, as []*rpc.Agent, async bool) {
	for _, a := range as {
		a.Register("bounce", func(ctx context.Context, args []byte) ([]byte, error) {
			n, self := args[0], args[1] == 1
			path := append([]byte{n - 1, args[1]}, append(args[2:], byte(a.Rank()))...)
			if n == 0 {
				return path[2:], nil
			}
			next := (a.Rank() + 1) % a.WorldSize()
			if self {
				next = a.Rank()
			}
			if async {
				return a.Go(ctx, next, "bounce", path).Wait()
			}
			return a.Call(ctx, next, "bounce", path)
		})
	}
}

// TestNested: A calls B, whose handler calls A, and deeper: A->B->A->B...
// with one worker per rank, synchronously and with Go+Wait, and
// concurrently from several callers.
func TestNested(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			as := newAgents(t, 2, rpc.Options{Workers: 1, QueueLen: 4})
			bounce(t, as, async)
			for _, depth := range []byte{2, 3, 8} {
				got := mustCall(t, as[0], 1, "bounce", []byte{depth - 1, 0})
				if len(got) != int(depth) {
					t.Fatalf("depth %d: path %v", depth, got)
				}
				for i, r := range got {
					if int(r) != (i+1)%2 {
						t.Fatalf("depth %d: path %v", depth, got)
					}
				}
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					if _, err := as[g%2].Call(within(t, 10*time.Second), 1-g%2, "bounce", []byte{5, 0}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestNestedSelf: a handler calling its own rank, with one worker.
func TestNestedSelf(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{Workers: 1})
	bounce(t, as, false)
	got := mustCall(t, as[0], 0, "bounce", []byte{4, 1})
	if string(got) != string([]byte{0, 0, 0, 0, 0}) {
		t.Fatalf("path %v", got)
	}
	// Three ranks, each handler calling the next: 0->1->2->0->1...
	as3 := newAgents(t, 3, rpc.Options{Workers: 1})
	bounce(t, as3, false)
	got = mustCall(t, as3[0], 1, "bounce", []byte{6, 0})
	want := []byte{1, 2, 0, 1, 2, 0, 1}
	if string(got) != string(want) {
		t.Fatalf("path %v, want %v", got, want)
	}
}

// TestNestedFanOut: one worker whose handler waits for several nested calls
// back to its own rank at once.
func TestNestedFanOut(t *testing.T) {
	as := newAgents(t, 2, rpc.Options{Workers: 1})
	as[1].Register("fan", func(ctx context.Context, args []byte) ([]byte, error) {
		calls := make([]*rpc.Call, 8)
		for i := range calls {
			calls[i] = as[1].Go(ctx, 1, "whoami", nil)
		}
		var sum uint64
		for _, c := range calls {
			if _, err := c.Wait(); err != nil {
				return nil, err
			}
			sum++
		}
		return binary.LittleEndian.AppendUint64(nil, sum), nil
	})
	got := mustCall(t, as[0], 1, "fan", nil)
	if binary.LittleEndian.Uint64(got) != 8 {
		t.Fatalf("got %v", got)
	}
}
