package engine

import "time"

// spinBudget returns how long a receive from p may spin now: Options.Spin
// scaled down while spinning has not been paying off for this peer.
func (p *peer) spinBudget(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	b := p.spinNs.Load()
	if b < 0 { // first use
		return max
	}
	return time.Duration(b)
}

// adaptSpin updates p's spin budget after a receive whose message completed
// d after the receive began (not counting the wake-up that followed): a
// message that came within max would have been caught by spinning, so the
// budget grows back towards max; a longer wait halves it, so a rank that
// mostly waits long (a slow peer, a bulk stream) stops burning a core.
func (p *peer) adaptSpin(d, max time.Duration) {
	if max <= 0 {
		return
	}
	b := time.Duration(p.spinNs.Load())
	if b < 0 {
		b = max
	}
	if d <= max {
		b = min(max, 2*b+max/16)
	} else {
		b /= 2
	}
	p.spinNs.Store(int64(b))
}
