package bench

import (
	"fmt"
	"math"
)

// validate checks one result's fields against each other.
func (x Result) validate() error {
	switch {
	case x.Suite == "" || x.Op == "":
		return fmt.Errorf("missing suite or op")
	case x.Impl != ImplBoltmesh && x.Impl != ImplStdnet:
		return fmt.Errorf("unknown impl %q", x.Impl)
	case x.Ranks < 1 || x.Iters < 1 || x.Bytes < 0:
		return fmt.Errorf("ranks %d, iters %d, bytes %d", x.Ranks, x.Iters, x.Bytes)
	case !(x.P50 > 0) || !(x.Mean > 0):
		return fmt.Errorf("p50 %v us, mean %v us: not positive", x.P50, x.Mean)
	case x.MsgRate < 0:
		return fmt.Errorf("message rate %v: negative", x.MsgRate)
	case x.P50 > x.P90 || x.P90 > x.P99 || x.P99 > x.Max:
		return fmt.Errorf("percentiles out of order: p50 %v p90 %v p99 %v max %v", x.P50, x.P90, x.P99, x.Max)
	}
	want := GBps(x.Bytes, x.Mean)
	if !near(x.AlgBW, want) {
		return fmt.Errorf("algbw %v GB/s, but %d bytes in %v us is %v", x.AlgBW, x.Bytes, x.Mean, want)
	}
	if x.BusBW < 0 || x.Bytes == 0 && x.BusBW != 0 || x.Bytes > 0 && x.Ranks > 1 && !(x.BusBW > 0) {
		return fmt.Errorf("busbw %v GB/s for %d bytes", x.BusBW, x.Bytes)
	}
	return nil
}

// near reports whether a and b agree to within 0.1% (JSON round trips of
// floats are exact, but a producer may round).
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-3*math.Max(math.Abs(a), math.Abs(b))+1e-12
}
