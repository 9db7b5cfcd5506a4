package engine_test

import (
	"fmt"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// BenchmarkFlood runs each flood shape of TestFloodBounded (and the mixed
// one) against this process as rank 0, with MaxQueuedBytes floodWindow:
// until the flooder blocks, then the drain. It reports the receiver's
// heap growth at its peak during the flood (peak-MiB) and after a GC once
// the flooder blocked (held-MiB), beside the window (window-MiB); ns/op
// is one whole flood and drain.
func BenchmarkFlood(b *testing.B) {
	for _, s := range append(floodShapes, floodShape{name: "mix"}) {
		b.Run("shape="+s.name, func(b *testing.B) {
			var peak, held int64
			for range b.N {
				f := startFlood(b, s.name)
				f.waitBlocked(b)
				after, p := f.growth()
				peak, held = max(peak, p), max(held, after)
				if s.name == "mix" {
					drainMix(b, f)
				} else {
					drainFlood(b, f, s)
				}
				f.finish(b)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(held)/(1<<20), "held-MiB")
			b.ReportMetric(float64(floodWindow)/(1<<20), "window-MiB")
		})
	}
}

// BenchmarkDrain times receiving messages that are all queued already
// (the sender sent them before any receive was posted) against receiving
// them as they arrive (stream): ns/op is one message of size bytes.
func BenchmarkDrain(b *testing.B) {
	for _, size := range []int{8, 1024} {
		for _, mode := range []string{"queued", "stream"} {
			b.Run(fmt.Sprintf("mode=%s/size=%d", mode, size), func(b *testing.B) {
				ts := newMesh(b, 2, engine.Options{MaxQueuedBytes: 1 << 30})
				out, in := make([]byte, size), make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				const batch = 1 << 20 // at most what the window holds
				for done := 0; done < b.N; {
					k := min(batch, b.N-done)
					sent := make(chan error, 1)
					b.StopTimer()
					go func() {
						for i := range k {
							floodPayload(out, done+i)
							if err := ts[1].Send(0, 1, out); err != nil {
								sent <- err
								return
							}
						}
						sent <- ts[1].Send(0, 2, nil) // behind every message on the one connection
					}()
					if mode == "queued" {
						if _, err := ts[0].Recv(1, 2); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					for i := range k {
						n, err := ts[0].RecvInto(1, 1, in)
						if err != nil {
							b.Fatal(err)
						}
						if n != size || in[0] != byte(done+i) {
							b.Fatalf("message %d: %d bytes, first %d", done+i, n, in[0])
						}
					}
					b.StopTimer()
					if err := <-sent; err != nil {
						b.Fatal(err)
					}
					if mode == "stream" {
						if _, err := ts[0].Recv(1, 2); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					done += k
				}
			})
		}
	}
}
