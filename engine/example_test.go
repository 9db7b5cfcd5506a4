package engine_test

import (
	"fmt"
	"net"
	"sync"

	"github.com/boltmesh/boltmesh/engine"
)

// Two ranks in one process over loopback: rank 1 sends, rank 0 receives
// into its own buffer, then both meet at a barrier.
func Example() {
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for r := range lns {
		lns[r], _ = net.Listen("tcp", "127.0.0.1:0")
		addrs[r] = lns[r].Addr().String()
	}
	ranks := make([]*engine.NetTransport, 2)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Go(func() {
			t, err := engine.FromListener(r, 2, lns[r], addrs, engine.Options{})
			if err != nil {
				panic(err)
			}
			ranks[r] = t
		})
	}
	wg.Wait()
	defer ranks[0].Close()
	defer ranks[1].Close()

	go ranks[1].Send(0, 42, []byte("hello from rank 1"))
	buf := make([]byte, 64)
	n, err := ranks[0].RecvInto(1, 42, buf)
	fmt.Println(string(buf[:n]), err)

	wg.Go(func() { ranks[1].Barrier() })
	fmt.Println(ranks[0].Barrier())
	wg.Wait()
	// Output:
	// hello from rank 1 <nil>
	// <nil>
}
