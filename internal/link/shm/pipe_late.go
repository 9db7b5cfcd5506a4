package shm

import (
	"sync/atomic"
	"time"
)

// The late arm. A goroutine that polls a pipe for each message it
// receives (the receiver of a ping-pong, a collective's steps) stops
// between messages only for a moment. Were it to ask for a bell each time
// it stopped (Polling), and take the ask back as it began again, it would
// write the word the writer loads after every message twice a message,
// and each write takes that line from the other core: in a ping-pong of
// 8-byte messages between processes, about a quarter of each round
// trip. Conn.Polled (StopPolled) stops without asking; a timer asks once
// nobody has begun to poll the pipe for lateArm, and has the Conn read
// what came meanwhile, so a message that comes while nobody looks waits
// at most about twice that (or until somebody polls it). A goroutine
// that is about to sleep until the pipe brings something stops with
// Conn.Polling (StopPolling), which asks at once.

// lateArm is how long a pipe nobody polls may go without asking for a
// bell after Polled. Go's timers fire late by up to a millisecond when
// the process is idle.
const lateArm = 200 * time.Microsecond

// StopPolled implements ioloop.Poller: if the goroutine was the last
// poller, the pipe asks for a bell only once nobody has polled it for
// lateArm, not now.
func (p *Pipe) StopPolled() {
	if p.stopPolling() != 0 {
		return
	}
	// The count first, then late: armLate clears late before it loads
	// the count, so that one of the two sees the other.
	if !p.late.Load() && p.late.CompareAndSwap(false, true) {
		p.timer.Reset(lateArm)
	}
}

// stopPolling counts a poller out and returns how many are left.
func (p *Pipe) stopPolling() uint32 { return uint32(p.polls.Add(^uint64(0))) }

// settle asks for a bell if nobody polls the pipe and it has not asked,
// and has the Conn read what came before it asked.
func (p *Pipe) settle() {
	if p.Pollers() != 0 || p.asked() {
		return
	}
	if !p.armEmpty() {
		p.conn.Look()
	}
}

// armLate is the late-arm timer's: it asks for a bell if nobody has
// begun to poll the pipe since it last looked, lateArm ago, or looks
// again in lateArm. So a pipe left by Polled asks within one to two
// lateArm.
func (p *Pipe) armLate() {
	p.late.Store(false)
	v := p.polls.Load()
	n, began := uint32(v), uint32(v>>32)
	switch {
	case n != 0:
		// A poller stops with Polled, which sets the timer, or asks itself.
	case p.seen.Swap(began) != began:
		// Polled since the last look: look again in lateArm.
		if p.late.CompareAndSwap(false, true) {
			p.timer.Reset(lateArm)
		}
	default:
		p.settle()
	}
}

// asked reports whether the pipe has asked for a bell and none has rung
// since: whatever came before it asked was found then, and whatever
// comes after rings. A load, not armEmpty's store: the word's line stays
// shared with the writer.
func (p *Pipe) asked() bool {
	p.bmu.Lock()
	defer p.bmu.Unlock()
	return !p.shut && atomic.LoadUint32(p.rx.wantData) != 0
}
