// Package credit is the flow-control accounting of one pair of ranks
// (frame/spec.md, "Flow control"): the credit this rank holds for sending
// to a peer (Out) and the credit it granted that peer (In). Each credited
// frame (an eager SEND, an RTS, an RPC request) costs frame.Cost of its
// payload; a sender never sends one without the credit for it, and a
// receiver drops a peer that does; released credit goes back in
// cumulative CREDIT totals. It knows no rank, link or frame beyond its
// cost: the engine reads and writes the frames.
//
// Lock rules. Out: mu guards every field but granted and used (atomics:
// Take, on every send's way, is one compare-and-swap, not a lock and an
// unlock; granted is stored under mu, with the wake-up) and known (an
// atomic copy of the window, which never changes once set). Waiters take
// the wake channel under mu (State) and then try Take, so that a grant
// after that try closes it; they wait on it without mu. In: mu guards
// every field; it is a leaf, taken also under the engine's peer lock, and
// never holding another.
package credit

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Out is the credit this rank holds for sending to one peer. Call Init
// before use.
type Out struct {
	mu      sync.Mutex
	granted atomic.Uint64 // cumulative credit the peer granted
	used    atomic.Uint64 // cumulative credit this rank's frames used
	window  uint64        // the peer's first grant: its whole window; 0 until it came
	wake    chan struct{} // closed and replaced when granted grows or the peer is lost, if taken
	taken   bool          // a waiter took wake since it was made: a change must close it
	lost    bool
	known   atomic.Uint64 // window, once the first grant came
}

// Init readies c.
func (c *Out) Init() { c.wake = make(chan struct{}) }

// Window returns the peer's window, or 0 before its first grant; it
// takes no lock.
func (c *Out) Window() uint64 { return c.known.Load() }

// Take uses cost if that much is available and reports whether it did.
func (c *Out) Take(cost uint64) bool {
	for {
		used := c.used.Load()
		if c.granted.Load()-used < cost {
			return false
		}
		if c.used.CompareAndSwap(used, used+cost) {
			return true
		}
	}
}

// GiveBack returns cost taken for a frame that was never sent.
func (c *Out) GiveBack(cost uint64) {
	c.used.Add(-cost)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changed()
}

// changed wakes the waiters, if any took wake: a grant nobody waits for
// (the usual case) makes no channel. mu is held.
func (c *Out) changed() {
	if c.taken && !c.lost {
		close(c.wake)
		c.wake, c.taken = make(chan struct{}), false
	}
}

// State returns the window (0 before the first grant), whether the peer
// is lost, and the channel that the next change closes, for a waiter.
func (c *Out) State() (window uint64, lost bool, wake <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.taken = true
	return c.window, c.lost, c.wake
}

// Grant records the peer's cumulative grant total.
func (c *Out) Grant(total uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.window == 0 {
		c.window = total
		c.known.Store(total)
	}
	if total > c.granted.Load() {
		c.granted.Store(total)
		c.changed()
	}
}

// Granted returns the peer's cumulative grant total so far; it takes no
// lock.
func (c *Out) Granted() uint64 { return c.granted.Load() }

// Fail wakes every waiter for good: the peer is lost.
func (c *Out) Fail() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lost {
		c.lost = true
		close(c.wake)
	}
}

// In is the credit this rank granted one peer, a window of Window bytes.
type In struct {
	Window uint64 // the whole window (Options.MaxQueuedBytes); set before use, never changed

	mu      sync.Mutex
	granted uint64 // cumulative credit granted (sent, or about to be)
	used    uint64 // cumulative credit of the credited frames that arrived
	freed   uint64 // cumulative credit released
}

// Open grants the whole window, once: the first CREDIT's total, or 0 if
// it was granted already.
func (c *In) Open() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.granted != 0 {
		return 0
	}
	c.granted = c.Window
	return c.granted
}

// Use accounts a credited frame of cost that arrived, and releases it at
// once if free (it goes straight into a posted receive). It returns the
// new grant total to send (0: none), or an error wrapping ErrFlowControl
// if the peer had no credit for the frame.
func (c *In) Use(cost uint64, free bool) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.granted-c.used < cost {
		return 0, fmt.Errorf("%w: a frame of %d bytes of credit with %d left", ErrFlowControl, cost, c.granted-c.used)
	}
	c.used += cost
	if free {
		c.freed += cost
	}
	return c.regrant(), nil
}

// Held returns the credit of the peer's frames that arrived and are not
// released: what it may not use again until they are.
func (c *In) Held() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used - c.freed
}

// Free releases cost and returns the new grant total to send (0: none).
func (c *In) Free(cost uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freed += cost
	return c.regrant()
}

// regrant decides whether released credit goes back now: once a quarter
// of the window is released, and as soon as anything is while less than
// half of the window is left to the sender (which may then be waiting for
// the largest frame it can send, a quarter of the window). mu is held.
func (c *In) regrant() uint64 {
	total := c.freed + c.Window
	back := total - c.granted
	if back == 0 || back < c.Window/4 && c.granted-c.used >= c.Window/2 {
		return 0
	}
	c.granted = total
	return total
}
