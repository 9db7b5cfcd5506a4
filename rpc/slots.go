package rpc

import (
	"context"
	"sync"
)

// slot is what one worker runs: the request and the cancel function of
// its handler's context, so that a caller's cancellation (or goodbye)
// reaches a running handler.
type slot struct {
	mu     sync.Mutex
	from   int
	id     uint64
	cancel context.CancelFunc // nil while idle
}

func (s *slot) set(from int, id uint64, cancel context.CancelFunc) {
	s.mu.Lock()
	s.from, s.id, s.cancel = from, id, cancel
	s.mu.Unlock()
}

// cancelIf cancels the running handler if it serves request id of rank
// from (any request of from when all is set).
func (s *slot) cancelIf(from int, id uint64, all bool) {
	s.mu.Lock()
	if s.cancel != nil && s.from == from && (all || s.id == id) {
		s.cancel()
	}
	s.mu.Unlock()
}

// slotSet is every worker's slot, helpers included.
type slotSet struct {
	mu  sync.Mutex
	set map[*slot]struct{}
}

func (ss *slotSet) add() *slot {
	s := &slot{}
	ss.mu.Lock()
	if ss.set == nil {
		ss.set = make(map[*slot]struct{})
	}
	ss.set[s] = struct{}{}
	ss.mu.Unlock()
	return s
}

func (ss *slotSet) remove(s *slot) {
	ss.mu.Lock()
	delete(ss.set, s)
	ss.mu.Unlock()
}

// cancel cancels the handlers running request id of rank from, or every
// request of from when all is set. It does not block.
func (ss *slotSet) cancel(from int, id uint64, all bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for s := range ss.set {
		s.cancelIf(from, id, all)
	}
}
