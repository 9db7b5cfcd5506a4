package grpcbench

import (
	"os"
	"testing"

	"github.com/boltmesh/boltmesh/rpc/internal/rpcbench"
)

// TestMain runs a benchmark server instead of the tests when this binary is
// re-executed as one (rpcbench.StartServer): boltmesh's, net/rpc's or
// gRPC-go's.
func TestMain(m *testing.M) {
	rpcbench.ServeIfChild(map[string]rpcbench.Server{"grpc": serveGRPC})
	os.Exit(m.Run())
}

type namedImpl struct {
	name string
	impl rpcbench.Impl
}

var (
	// remote: the server in a child process.
	remote = []namedImpl{{"boltmesh", rpcbench.RemoteBoltmesh}, {"netrpc", rpcbench.RemoteNetRPC}, {"grpc", RemoteGRPC}}
	// inProcess: client and server in this process.
	inProcess = []namedImpl{{"boltmesh", rpcbench.Boltmesh}, {"netrpc", rpcbench.NetRPC}, {"grpc", GRPC}}
)

// BenchmarkCall: echo calls of 8 B and 64 KiB from 1, 16 and 64 concurrent
// callers over loopback, boltmesh against net/rpc and gRPC-go in one run,
// each between two processes as RPC between ranks is: the server runs in a
// child process (this test binary re-executed), and, as the boltmesh CLI
// does for co-located ranks, each process gets half the cores (GOMAXPROCS =
// NumCPU/2) unless GOMAXPROCS is set in the environment. Reports the median
// round trip (p50-us), calls/s and allocations per call (B/op, allocs/op)
// of the client process only: the server's are not counted.
func BenchmarkCall(b *testing.B) { bench(b, remote) }

// BenchmarkCallInProcess is BenchmarkCall with client and server in this
// process, sharing all its cores; B/op and allocs/op count both sides.
func BenchmarkCallInProcess(b *testing.B) { bench(b, inProcess) }

func bench(b *testing.B, impls []namedImpl) {
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

// TestEcho checks every implementation once in both modes, so that
// `go test` here runs something.
func TestEcho(t *testing.T) {
	for _, mode := range []struct {
		name  string
		impls []namedImpl
	}{{"remote", remote}, {"inprocess", inProcess}} {
		for _, im := range mode.impls {
			t.Run(mode.name+"/"+im.name, func(t *testing.T) {
				// testing.Benchmark reports a failure as a zero result.
				if r := testing.Benchmark(func(b *testing.B) { rpcbench.Run(b, im.impl, 64, 4) }); r.N == 0 {
					t.Fatal("the benchmark failed")
				}
			})
		}
	}
}
