package engine_test

import (
	"net"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// listeners binds n loopback listeners on ephemeral ports.
func listeners(t testing.TB, n int) ([]net.Listener, []string) {
	t.Helper()
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return lns, addrs
}

// newMesh builds an n-rank mesh in this process and closes it at cleanup.
func newMesh(t testing.TB, n int, opts engine.Options) []*engine.NetTransport {
	t.Helper()
	lns, addrs := listeners(t, n)
	ts := make([]*engine.NetTransport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { ts[r], errs[r] = engine.FromListener(r, n, lns[r], addrs, opts) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, tr := range ts {
			tr.Close()
		}
	})
	return ts
}
