package rpc

import (
	"context"
	"sync"
	"sync/atomic"
)

// Stats are an agent's counters since it started.
type Stats struct {
	Calls      uint64 // calls started (Call and Go), to any rank
	CallErrors uint64 // calls that ended with an error
	InFlight   int64  // calls started and not yet ended
	Requests   uint64 // requests received (calls from this rank included)
	// RequestErrors counts requests answered with an error: not found,
	// busy, handler error or panic, too large, closed, or given up after
	// the caller's deadline.
	RequestErrors uint64
	Busy          uint64 // requests refused because the queue was full
	Running       int64  // handlers running now
	Queued        int    // requests waiting for a worker now
}

// counters are the atomics behind Stats.
type counters struct {
	calls, callErrors       atomic.Uint64
	inFlight                atomic.Int64
	requests, requestErrors atomic.Uint64
	busy                    atomic.Uint64
	running                 atomic.Int64
}

func (s *counters) started() {
	s.calls.Add(1)
	s.inFlight.Add(1)
}

func (s *counters) ended(err error) {
	if err != nil {
		s.callErrors.Add(1)
	}
	s.inFlight.Add(-1)
}

// Stats returns a snapshot of the agent's counters.
func (a *Agent) Stats() Stats {
	s := &a.stats
	return Stats{
		Calls:         s.calls.Load(),
		CallErrors:    s.callErrors.Load(),
		InFlight:      s.inFlight.Load(),
		Requests:      s.requests.Load(),
		RequestErrors: s.requestErrors.Load(),
		Busy:          s.busy.Load(),
		Running:       s.running.Load(),
		Queued:        len(a.jobs),
	}
}

// activity counts the work in progress (calls, requests, sends) and lets
// Close and Shutdown wait until there is none.
type activity struct {
	n       atomic.Int64
	waiters atomic.Int32
	mu      sync.Mutex
	idle    chan struct{} // closed when n drops to 0, while someone waits
}

func (w *activity) inc() { w.n.Add(1) }

func (w *activity) dec() {
	if w.n.Add(-1) == 0 && w.waiters.Load() > 0 {
		w.mu.Lock()
		if w.idle != nil {
			close(w.idle)
			w.idle = nil
		}
		w.mu.Unlock()
	}
}

// wait returns once n is 0, or with ctx's error.
func (w *activity) wait(ctx context.Context) error {
	w.waiters.Add(1)
	defer w.waiters.Add(-1)
	for {
		w.mu.Lock()
		if w.n.Load() == 0 {
			w.mu.Unlock()
			return nil
		}
		if w.idle == nil {
			w.idle = make(chan struct{})
		}
		idle := w.idle
		w.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
