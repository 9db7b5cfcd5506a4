package engine_test

import (
	"fmt"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// BenchmarkStarWorkers measures round trips between two workers of a
// 3-rank star on loopback, through the coordinator: one op is a message
// of size N from worker 1 to worker 2 and the same message back. Bytes
// are counted both ways; p50-us and p99-us are the round trip's. Above
// engine.RelayPart the coordinator relays each payload in parts. The
// ranks do not spin (Spin -1): three ranks in one process on a machine of
// two cores would take, spinning, the cores the coordinator's event loop
// needs, where in a star each rank has a machine of its own.
func BenchmarkStarWorkers(b *testing.B) {
	for _, size := range []int{8, 64 << 10, 1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { benchStarWorkers(b, size) })
	}
}

func benchStarWorkers(b *testing.B, size int) {
	ts := meshtest.Star(b, 3, engine.Options{Spin: -1})
	n := b.N
	echoed := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		for i := range n {
			m, err := ts[2].RecvInto(1, benchTag, buf)
			if err == nil {
				err = ts[2].Send(1, benchTag, buf[:m])
			}
			if err != nil {
				echoed <- fmt.Errorf("echo %d: %w", i, err)
				return
			}
		}
		echoed <- nil
	}()
	lat := benchRoundTrips(b, size,
		func(p []byte) error { return ts[1].Send(2, benchTag, p) },
		func(p []byte) (int, error) { return ts[1].RecvInto(2, benchTag, p) })
	if err := <-echoed; err != nil {
		b.Fatal(err)
	}
	benchLatency(b, lat)
}
