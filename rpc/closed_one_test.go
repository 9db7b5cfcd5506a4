package rpc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/heap"
	"github.com/boltmesh/boltmesh/rpc"
)

// TestOneErrClosed: packages engine, heap and rpc have one ErrClosed, so
// that a caller tests for "closed" once, whatever was closed: an agent's
// refused call and a closed transport's refused operations match each
// package's. Before, the three were unequal values.
func TestOneErrClosed(t *testing.T) {
	ts := newMesh(t, 1)
	a, err := rpc.NewAgent(ts[0], rpc.Options{Handlers: stdHandlers(0)})
	if err != nil {
		t.Fatal(err)
	}
	closeAll(t, []*rpc.Agent{a})
	_, callErr := a.Call(context.Background(), 0, "echo", nil)
	if err := ts[0].Close(); err != nil {
		t.Fatal(err)
	}
	_, allocErr := ts[0].Alloc(64, 0)
	sendErr := ts[0].Send(0, 1, []byte("x"))
	for what, err := range map[string]error{"a closed agent's call": callErr, "Alloc after Close": allocErr, "Send after Close": sendErr} {
		for _, closed := range []error{engine.ErrClosed, heap.ErrClosed, rpc.ErrClosed} {
			if !errors.Is(err, closed) {
				t.Errorf("%s: %v, does not match %v", what, err, closed)
			}
		}
	}
}
