package engine

import (
	"encoding/binary"
	"testing"
)

// BenchmarkPipeOneWay measures the software on a small message's way
// between neighbours, apart from the other core: one goroutine sends a
// message from rank 0 to rank 1 and receives it at rank 1, so that an op
// is a whole send path and a whole receive path, on one core and with
// the ring's lines in its cache. A goroutine of its own keeps polling
// rank 1's data pipe registered (Polling) throughout, as the other end
// of a ping-pong does while it waits, so that no bell rings: what is
// left out is only the cost of the lines moving between cores, which
// BenchmarkPingPong adds.
func BenchmarkPipeOneWay(b *testing.B) {
	ts := pair(b, Options{})
	if got := ts[0].Topology().Neighbours(); len(got) != 1 {
		b.Fatalf("Topology().Neighbours = %v, want [1]", got)
	}
	from := ts[1].peer(0)
	from.link.polling(laneData, true)
	defer from.link.polling(laneData, false)
	out, in := make([]byte, 8), make([]byte, 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		binary.LittleEndian.PutUint64(out, uint64(i))
		if err := ts[0].Send(1, 7, out); err != nil {
			b.Fatal(err)
		}
		n, err := ts[1].RecvInto(0, 7, in)
		if err != nil || n != 8 || binary.LittleEndian.Uint64(in) != uint64(i) {
			b.Fatalf("message %d: %d bytes %x, %v", i, n, in[:n], err)
		}
	}
}
