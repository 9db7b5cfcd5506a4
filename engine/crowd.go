package engine

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Crowding. A wait spins (Options.Spin) so that an answer within
// microseconds costs no wake-up; on a machine with more runnable threads
// than cores, spinning ranks take the cores of the ranks they wait for,
// so there a wait gives its core up between polls (yieldCore) and the
// event loop does not spin at all. The machine is crowded when more ranks
// run on it than it has cores (static, known at construction from the
// loopback peers), or while its run queue says so (dynamic: sampled by the
// heartbeat goroutine, crowdSample), which also covers ranks that share
// cores without knowing it, as emulated hosts in network namespaces do,
// and other work. Either applies only while Options.Spin is left to its
// default.
//
// Lock rule: static and auto are set before the transport is used; dyn
// is an atomic; avg and the hysteresis are the heartbeat goroutine's.
type crowding struct {
	static bool        // more local ranks than cores
	auto   bool        // Options.Spin was left to its default: crowding may change it
	dyn    atomic.Bool // the run queue has been longer than the cores, lately
	avg    float64     // moving average of the runnable threads but the sampler
	cpus   float64     // the cores this process may run on
}

// crowded reports whether waits give their core up between polls.
func (t *NetTransport) crowded() bool { return t.topo.crowd.static || t.topo.crowd.dyn.Load() }

// Thresholds of the dynamic crowding, in runnable threads beyond the
// cores (moving average, each sample weighing crowdWeight): it starts
// above crowdOn and ends below crowdOff.
const (
	crowdOn     = 0.5
	crowdOff    = 0.0
	crowdWeight = 0.5
	// crowdEvery is how often the heartbeat goroutine samples: a read of
	// /proc/stat, tens of microseconds.
	crowdEvery = 100 * time.Millisecond
)

// crowdSample takes one sample of the machine's run queue and updates
// the dynamic crowding, telling the event loop whether to spin.
func (t *NetTransport) crowdSample() {
	c := &t.topo.crowd
	if !c.auto || c.static {
		return
	}
	n, ok := runnableThreads()
	if !ok {
		return
	}
	c.note(float64(n - 1)) // the sampler itself runs
	if on := c.dyn.Load(); on != c.decide(on) {
		c.dyn.Store(!on)
		t.loop.SetSpin(t.loopSpin(!on))
	}
}

// note adds a sample of the runnable threads to the average.
func (c *crowding) note(others float64) {
	if c.cpus == 0 {
		c.cpus = float64(runtime.NumCPU())
	}
	c.avg += crowdWeight * (others - c.avg)
}

// decide returns whether the machine is crowded now, given that it was
// (on): with hysteresis, so that a queue at the edge does not flap.
func (c *crowding) decide(on bool) bool {
	if on {
		return c.avg-c.cpus > crowdOff
	}
	return c.avg-c.cpus > crowdOn
}

// loopSpin is the event loop's spin (a full send's, the hot loop's, which
// do not give the core up): none on a crowded machine.
func (t *NetTransport) loopSpin(crowded bool) int64 {
	if crowded {
		return 0
	}
	return int64(max(t.opts.Spin, 0))
}
