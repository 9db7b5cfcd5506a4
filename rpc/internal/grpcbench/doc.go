// Package grpcbench compares boltmesh's RPC agent with Go's net/rpc and
// gRPC-go over loopback, in one benchmark run: with the server in a child
// process (BenchmarkCall) or in the same one (BenchmarkCallInProcess). It
// is a separate module so that importers of boltmesh never download gRPC;
// run it with `make rpc-bench` (or `go test -bench Call` in this
// directory).
package grpcbench
