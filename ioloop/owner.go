package ioloop

import (
	"sync"
	"sync/atomic"
)

// side is the ownership of one side of a Conn, its reads or its writes:
// at most one goroutine owns a side at a time, and it alone reads the
// Stream (and calls the handler) or writes it. Whoever has work for a
// side (bytes came, frames were queued) asks for it and then tries to own
// the side; nobody waits for a side but to close or detach:
//
//	ask      the side is to be served: pending = true
//	acquire  own the side if nobody does (never waits); false: its owner
//	         serves what was asked before it lets go
//	claim    the owner takes what was asked (pending = false), reporting
//	         whether anything was
//	release  let go, and report again: something was asked meanwhile, whose
//	         asker may have found the side owned, so the caller serves it
//	         (acquires again)
//	lock     own the side, waiting (closing it, detaching a payload); it
//	         asks nothing, and release still reports what was asked
//	asked    whether something is asked and not yet claimed
//
// The rule that makes leaving work to the owner safe: an asker asks
// before it acquires, and an owner releases before it looks whether
// anything was asked (release does both in that order), so that of an
// asker and a releasing owner at least one sees the other.
type side struct {
	mu      sync.Mutex
	pending atomic.Bool
}

func (s *side) ask()          { s.pending.Store(true) }
func (s *side) acquire() bool { return s.mu.TryLock() }
func (s *side) lock()         { s.mu.Lock() }
func (s *side) asked() bool   { return s.pending.Load() }

// claim is one load in the common case, where nothing was asked: a load
// costs less than the swap.
func (s *side) claim() bool { return s.pending.Load() && s.pending.Swap(false) }

func (s *side) release() (again bool) {
	s.mu.Unlock()
	return s.pending.Load()
}
