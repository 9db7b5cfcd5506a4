// Package own is the ownership primitive: a thing (one side of a
// connection, its reads or its writes; a neighbour pair's mailbox) that
// at most one goroutine owns at a time, and that nobody waits for but to
// close it. It is stated here once, in the manner of Go's
// internal/poll/fd_mutex.go, and every owner in boltmesh uses it:
// ioloop's Conn for its two sides, internal/link/shm's Mailbox for its
// exchanges. No other code tries a lock or keeps a pending flag.
//
//	Ask      work for the thing is to be done: pending = true
//	Acquire  own the thing if nobody does (never waits); false: its owner
//	         serves what was asked before it lets go
//	Claim    the owner takes what was asked (pending = false), reporting
//	         whether anything was
//	Release  let go, and report again: something was asked meanwhile,
//	         whose asker may have found the thing owned, so the caller
//	         serves it (acquires again)
//	Lock     own the thing, waiting (to close it, detach from it, or run
//	         an exchange through it); it asks nothing, and Release still
//	         reports what was asked
//	Asked    whether something is asked and not yet claimed
//
// The rule that makes leaving work to the owner safe: an asker asks
// before it acquires, and an owner releases before it looks whether
// anything was asked (Release does both in that order), so that of an
// asker and a releasing owner at least one sees the other.
//
// Lock rule: an Owned is a leaf lock of its own; what it guards says so.
package own

import (
	"sync"
	"sync/atomic"
)

// Owned is one thing's ownership. The zero value is unowned, with
// nothing asked.
type Owned struct {
	mu      sync.Mutex
	pending atomic.Bool
}

// Ask says that work for the thing is to be done.
func (s *Owned) Ask() { s.pending.Store(true) }

// Acquire owns the thing if nobody does, without waiting.
func (s *Owned) Acquire() bool { return s.mu.TryLock() }

// Lock owns the thing, waiting for its owner to let go.
func (s *Owned) Lock() { s.mu.Lock() }

// Asked reports whether work is asked and not yet claimed.
func (s *Owned) Asked() bool { return s.pending.Load() }

// Claim takes what was asked, reporting whether anything was. It is one
// load in the common case, where nothing was asked: a load costs less
// than the swap.
func (s *Owned) Claim() bool { return s.pending.Load() && s.pending.Swap(false) }

// Release lets go, and reports whether something was asked meanwhile.
func (s *Owned) Release() (again bool) {
	s.mu.Unlock()
	return s.pending.Load()
}
