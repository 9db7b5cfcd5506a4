package bench

import (
	"fmt"
	"time"
)

// Plan chooses how many times a case runs. With Iters set every case runs
// exactly Iters timed iterations; otherwise rank 0 times the warm-up and
// picks the count that fills Duration, within [MinIters, MaxIters].
type Plan struct {
	Iters    int           `json:"iters,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	// Warmup is the number of untimed iterations before the timed ones;
	// 0 chooses by size (more for small messages).
	Warmup int `json:"warmup,omitempty"`
	// MinIters and MaxIters bound a duration-based count; 0 selects 5
	// and 200000.
	MinIters int `json:"min_iters,omitempty"`
	MaxIters int `json:"max_iters,omitempty"`
}

func (p Plan) validate() error {
	if p.Iters < 0 || p.Duration < 0 || p.Warmup < 0 || p.MinIters < 0 || p.MaxIters < 0 {
		return fmt.Errorf("bench: negative field in plan %+v", p)
	}
	if p.MaxIters > 0 && p.MinIters > p.MaxIters {
		return fmt.Errorf("bench: plan min iters %d above max %d", p.MinIters, p.MaxIters)
	}
	return nil
}

// warmups returns the number of warm-up iterations for a message of size
// bytes.
func (p Plan) warmups(size int) int {
	switch {
	case p.Warmup > 0:
		return p.Warmup
	case size <= 64<<10:
		return 20
	case size <= 1<<20:
		return 5
	}
	return 2
}

// iters returns the timed iteration count, given the warm-up's time per
// iteration (ignored when Iters is fixed).
func (p Plan) iters(perIter time.Duration) int {
	if p.Iters > 0 {
		return p.Iters
	}
	lo, hi := p.bounds()
	n := hi
	if perIter > 0 {
		n = int(min(int64(p.Duration/perIter), int64(hi)))
	}
	return max(n, lo)
}

// bounds returns MinIters and MaxIters, defaults filled in.
func (p Plan) bounds() (lo, hi int) {
	lo, hi = p.MinIters, p.MaxIters
	if lo == 0 {
		lo = 5
	}
	if hi == 0 {
		hi = 200000
	}
	return lo, hi
}

// countOK reports whether n is a count iters can return: the other ranks
// check rank 0's count with it before they run that many iterations.
func (p Plan) countOK(n int) bool {
	if p.Iters > 0 {
		return n == p.Iters
	}
	lo, hi := p.bounds()
	return n >= lo && n <= max(lo, hi)
}
