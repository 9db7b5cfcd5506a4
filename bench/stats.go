package bench

import (
	"slices"
	"time"
)

// Stats summarizes the per-iteration times of one case.
type Stats struct {
	N                  int
	P50, P90, P99, Max time.Duration
	Mean               time.Duration // total time / N
	Total              time.Duration
}

// Summarize sorts lat in place and returns its percentiles (nearest rank),
// maximum, total and mean.
func Summarize(lat []time.Duration) Stats {
	n := len(lat)
	if n == 0 {
		return Stats{}
	}
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	slices.Sort(lat)
	return Stats{
		N:     n,
		P50:   percentile(lat, 50),
		P90:   percentile(lat, 90),
		P99:   percentile(lat, 99),
		Max:   lat[n-1],
		Mean:  total / time.Duration(n),
		Total: total,
	}
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100 // ceil(n*p/100), the nearest rank
	return sorted[max(i-1, 0)]
}

// Micros converts d to microseconds.
func Micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// GBps is bytes moved in us microseconds, in GB/s (1e9 bytes per second).
func GBps(bytes int64, us float64) float64 {
	if us <= 0 {
		return 0
	}
	return float64(bytes) / us / 1e3
}

// AllReduceBusFactor is the bus bandwidth factor of an allreduce over n
// ranks, 2(n-1)/n, as nccl-tests define it: busbw = algbw * factor. It is
// 0 for one rank, which moves nothing.
func AllReduceBusFactor(n int) float64 {
	if n < 1 {
		return 0
	}
	return 2 * float64(n-1) / float64(n)
}
