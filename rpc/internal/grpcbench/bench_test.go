package grpcbench

import (
	"testing"

	"github.com/boltmesh/boltmesh/rpc/internal/rpcbench"
)

// BenchmarkCall: echo calls of 8 B and 64 KiB from 1, 16 and 64 concurrent
// callers over loopback, boltmesh against net/rpc and gRPC-go in one run,
// with the median round trip (p50-us), calls/s and allocations per call.
func BenchmarkCall(b *testing.B) {
	impls := []struct {
		name string
		impl rpcbench.Impl
	}{{"boltmesh", rpcbench.Boltmesh}, {"netrpc", rpcbench.NetRPC}, {"grpc", GRPC}}
	for _, size := range rpcbench.Sizes {
		for _, callers := range rpcbench.Callers {
			for _, im := range impls {
				b.Run(rpcbench.Name(im.name, size, callers), func(b *testing.B) {
					rpcbench.Run(b, im.impl, size, callers)
				})
			}
		}
	}
}

// TestEcho checks every implementation once, so that `go test` here runs
// something.
func TestEcho(t *testing.T) {
	for name, impl := range map[string]rpcbench.Impl{"boltmesh": rpcbench.Boltmesh, "netrpc": rpcbench.NetRPC, "grpc": GRPC} {
		t.Run(name, func(t *testing.T) {
			testing.Benchmark(func(b *testing.B) { rpcbench.Run(b, impl, 64, 4) })
		})
	}
}
