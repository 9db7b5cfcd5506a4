package spin

import (
	"sync/atomic"
	"time"
)

// A Gauge adapts how long the waits on one peer spin to how long
// they last. A wait spins for Options.Spin (the full budget) before it
// sleeps, which takes the wake-up out of a message's latency when the
// message comes within it, and burns the budget's CPU for nothing when
// it does not. The gauge keeps a moving average of the share of recent
// waits (receives, mailbox exchanges and barrier rounds with the peer)
// that outlasted the full budget; while it is above gaugeHigh, most
// waits would sleep anyway, and they spin only Floor. The average
// weighs each wait 1/8: it takes 11 long waits in a row to get from none
// to gaugeHigh, and 3 short ones to get back, so that a peer whose
// messages come quickly again is waited for at full speed again at once.
// A wait that ended within its spin counts as short, one that slept by
// its spin plus its sleep.
//
// Lock rule: none. Waiters on the peer update it concurrently with a
// load and a store, so that an update may be lost, which only blurs the
// average.
type Gauge struct {
	long atomic.Uint32 // the share of recent waits that outlasted the full budget, in 1/gaugeOne
}

const (
	gaugeOne   = 256
	gaugeShift = 3 // each wait weighs 1/8
	gaugeHigh  = gaugeOne * 3 / 4
	// Floor is the spin of a wait on a peer most of whose waits
	// outlast the full budget: enough to catch a message that was on its
	// way already.
	Floor = 10 * time.Microsecond
)

// Budget returns how long a wait on the peer spins, of full
// (Options.Spin).
func (g *Gauge) Budget(full time.Duration) time.Duration {
	if full > Floor && g.long.Load() > gaugeHigh {
		return Floor
	}
	return full
}

// Note records a wait that outlasted the full budget (long) or not.
func (g *Gauge) Note(long bool) {
	v := g.long.Load()
	nv := v - v>>gaugeShift
	if long {
		nv += gaugeOne >> gaugeShift
	}
	if nv != v { // a run of short waits stores nothing
		g.long.Store(nv)
	}
}

// Slept records a wait that spun spun and then slept since asleep, with
// full budget; with no spinning at all (full not positive), nothing.
func (g *Gauge) Slept(spun time.Duration, asleep time.Time, full time.Duration) {
	if full > 0 {
		g.Note(spun+time.Since(asleep) > full)
	}
}

// Reset forgets the waits noted: the next wait spins the full budget.
func (g *Gauge) Reset() { g.long.Store(0) }
