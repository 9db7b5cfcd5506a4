package rpc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/rpc"
)

// TestSealedCalls: calls both ways at once over sealed links (every
// request and reply sealed) all come back with their own answers.
func TestSealedCalls(t *testing.T) {
	ts := meshtest.Mesh(t, 3, engine.Options{SharedMemory: engine.SharedMemoryOff, Seal: engine.SealAlways, MeshKey: []byte("the rpc tests' key for sealing!!")})
	if top := ts[0].Topology(); len(top.Sealed()) != 2 {
		t.Fatalf("rank 0's sealed peers: %v, want both", top.Sealed())
	}
	as := agentsOn(t, ts, rpc.Options{})
	var wg sync.WaitGroup
	for from, a := range as {
		for to := range as {
			if to == from {
				continue
			}
			wg.Go(func() {
				for i := range 50 {
					args := payload(from*1000+to*100+i, 1+i*997%70000)
					got, err := a.Call(context.Background(), to, "echo", args)
					if err != nil || string(got) != string(args) {
						t.Errorf("call %d->%d #%d: %v, reply matches %v", from, to, i, err, string(got) == string(args))
						return
					}
				}
			})
		}
	}
	wg.Wait()
}
