package ioloop

import (
	"sync"
	"sync/atomic"
)

// Wake-ups the loop serves. A caller that wants a Conn served but must
// not serve it on its own stack (it may hold locks that a handler of the
// Conn takes), or that would start a goroutine to do it (a watchdog, once
// per check), asks the loop instead: Wake queues the Conn and rings the
// poller's wake-up, and the loop goroutine, between two waits, writes
// what the Conn has queued and reads what has arrived, as if both of its
// edges had come. It is the one way to have a Conn served later.
//
// Lock rule: wakes.mu guards queue and is a leaf; spare is the loop
// goroutine's. A Conn is in the queue at most once (Conn.woken).
type wakes struct {
	mu    sync.Mutex
	queue []*Conn
	spare []*Conn     // the last queue served, kept for its storage
	any   atomic.Bool // the queue may hold a Conn: the loop looks
}

// Wake has the loop serve c soon, on the loop goroutine: write what is
// queued for c (Queue, Post, a flush the socket was too full for) and
// read what c's Stream holds, delivering it to the handler, as the loop
// does when c's descriptor is ready. It never blocks and may be called
// from anywhere, a handler of c included; wakes that come before the
// loop serves c are served once.
func (c *Conn) Wake() {
	if c.woken.Load() || !c.woken.CompareAndSwap(false, true) {
		return // queued already, not served yet
	}
	l := c.loop
	l.wk.mu.Lock()
	l.wk.queue = append(l.wk.queue, c)
	l.wk.mu.Unlock()
	l.wk.any.Store(true)
	l.p.wake() // an error here is the loop's own, which its next wait reports
}

// serveWakes serves the Conns woken since it last ran. The loop goroutine
// alone calls it. A Wake while a Conn is being served queues it again,
// for the next round.
func (l *Loop) serveWakes() {
	if !l.wk.any.Load() {
		return
	}
	l.wk.any.Store(false) // before the queue is taken: a later Wake sets it again
	l.wk.mu.Lock()
	q := l.wk.queue
	l.wk.queue, l.wk.spare = l.wk.spare[:0], nil
	l.wk.mu.Unlock()
	for i, c := range q {
		q[i] = nil
		c.woken.Store(false)
		c.Flush()
		c.onReadable()
	}
	l.wk.spare = q[:0]
}
