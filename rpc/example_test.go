package rpc_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/rpc"
)

// Two ranks in one process over loopback: each serves "upper", rank 0
// calls rank 1 synchronously and asynchronously, and both shut down
// together.
func Example() {
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for r := range lns {
		lns[r], _ = net.Listen("tcp", "127.0.0.1:0")
		addrs[r] = lns[r].Addr().String()
	}
	agents := make([]*rpc.Agent, 2)
	transports := make([]*engine.NetTransport, 2)
	var wg sync.WaitGroup
	for r := range agents {
		wg.Go(func() {
			t, err := engine.FromListener(r, 2, lns[r], addrs, engine.Options{})
			if err != nil {
				panic(err)
			}
			transports[r] = t
			upper := func(_ context.Context, args []byte) ([]byte, error) {
				return []byte(strings.ToUpper(string(args))), nil
			}
			a, err := rpc.NewAgent(t, rpc.Options{Handlers: map[string]rpc.Handler{"upper": upper}})
			if err != nil {
				panic(err)
			}
			agents[r] = a
		})
	}
	wg.Wait()

	ctx := context.Background()
	reply, err := agents[0].Call(ctx, 1, "upper", []byte("hello"))
	fmt.Println(string(reply), err)
	call := agents[0].Go(ctx, 1, "upper", []byte("world"))
	reply, err = call.Wait()
	fmt.Println(string(reply), err)
	_, err = agents[0].Call(ctx, 1, "lower", nil)
	fmt.Println(err)

	errs := make([]error, 2)
	for r, a := range agents {
		wg.Go(func() { errs[r] = a.Shutdown(ctx) })
	}
	wg.Wait()
	fmt.Println(errs)
	for _, t := range transports {
		t.Close() // the agents are gone; the transports are the caller's
	}
	// Output:
	// HELLO <nil>
	// WORLD <nil>
	// rpc: call "lower" on rank 1: function not found
	// [<nil> <nil>]
}
