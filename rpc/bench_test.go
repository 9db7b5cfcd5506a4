package rpc_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/rpc/internal/rpcbench"
)

// BenchmarkCall: echo calls of 8 B and 64 KiB from 1, 16 and 64 concurrent
// callers, boltmesh against Go's net/rpc, both over loopback in this
// process. Besides ns/op, B/op and allocs/op (per call, both sides), each
// reports the median round trip (p50-us) and calls/s. gRPC-go is compared
// in the separate module rpc/internal/grpcbench (make rpc-bench).
func BenchmarkCall(b *testing.B) {
	impls := []struct {
		name string
		impl rpcbench.Impl
	}{{"boltmesh", rpcbench.Boltmesh}, {"netrpc", rpcbench.NetRPC}}
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
