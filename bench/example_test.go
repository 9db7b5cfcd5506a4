package bench_test

import (
	"fmt"
	"log"
	"net"
	"os"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
)

// Every rank of a mesh runs the same Runner; rank 0 gets the report. Here
// the mesh has one rank, so only the allreduce suite (one rank suffices)
// runs, on boltmesh and on the stdnet baseline.
func ExampleRunner() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	t, err := engine.FromListener(0, 1, ln, []string{ln.Addr().String()}, engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	r := &bench.Runner{T: t}
	rep, err := r.Run(bench.Config{Suites: []string{"allreduce"}, Sizes: []int{8, 1 << 20}, Plan: bench.Plan{Iters: 10}})
	if err != nil {
		log.Fatal(err) // a failed data check wraps bench.ErrCheck
	}
	for _, x := range rep.Results {
		fmt.Printf("%s %s %d B: p50 %.1f µs\n", x.Impl, x.Op, x.Bytes, x.P50)
	}
	rep.WriteJSON(os.Stdout) // the boltmesh-bench/v1 document
}
