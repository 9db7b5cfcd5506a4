package rpc

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// job is a request waiting for, or running on, a worker.
type job struct {
	from     int
	id       uint64
	h        Handler
	p        plumb.ServicePayload // remote: holds the request, args included
	args     []byte
	deadline time.Time
	self     *Call // a call from this rank: completed directly
}

// enqueue queues j for a worker and reports false if the queue is full.
func (a *Agent) enqueue(j job) bool {
	if j.self == nil {
		a.waiting[j.from].Add(1)
	}
	select {
	case a.jobs <- j:
		return true
	default:
		if j.self == nil {
			a.waiting[j.from].Add(-1)
		}
		return false
	}
}

// serve runs queued requests until the agent stops, or until stop is
// closed for a helper lent to a nested call.
func (a *Agent) serve(stop <-chan struct{}) {
	defer a.workers.Done()
	s := a.slots.add()
	defer a.slots.remove(s)
	for {
		select {
		case j := <-a.jobs:
			if j.self == nil {
				a.waiting[j.from].Add(-1)
			}
			a.run(j, s)
			if j.self == nil {
				a.flushIfLast(j.from)
				a.linger(j.from)
			}
		case <-stop:
			return
		case <-a.quit:
			a.flushAll()
			return
		}
	}
}

// flushIfLast writes the answers queued for rank from once no request of
// its waits for a worker any more: the worker that takes the last one of
// a burst sends them all. (An answer is queued only while another request
// from the same rank waits, and that request's worker checks after it.)
func (a *Agent) flushIfLast(from int) {
	if a.batcher != nil && a.waiting[from].Load() == 0 {
		a.batcher.FlushFrames(from)
	}
}

// flushAll writes every queued answer, as the agent stops.
func (a *Agent) flushAll() {
	if a.batcher != nil {
		for r := range a.world {
			if r != a.rank {
				a.batcher.FlushFrames(r)
			}
		}
	}
}

// lend starts a helper worker for the time a handler waits in a nested
// call, so that the requests the nested call may cause here (A calls B
// calls A) find a worker even if every worker is such a waiting handler.
// It returns the function that ends the loan; the helper finishes the
// request it is running, if any, then exits.
func (a *Agent) lend() func() {
	stop := make(chan struct{})
	a.workers.Add(1)
	go a.serve(stop)
	return func() { close(stop) }
}

// linger keeps a worker that has just answered rank from reading that
// connection for a while (unless a caller or another worker does): a
// caller that calls again soon has its request read and run by this
// goroutine with no wake-up in the way.
func (a *Agent) linger(from int) {
	if a.spinner == nil || !a.spinning[from].CompareAndSwap(false, true) {
		return
	}
	defer a.spinning[from].Store(false)
	a.spinner.SpinFrames(from, a.hasWork)
}

// run serves one request, on the worker whose slot is s, and answers it.
func (a *Agent) run(j job, s *slot) {
	if a.state.Load() == stateStopped || time.Now().After(j.deadline) {
		j.p.Release() // the caller has given up already, or been told
		a.endRequest(true)
		return
	}
	a.stats.running.Add(1)
	reply, err, panicked := a.invoke(j, s)
	a.stats.running.Add(-1)
	if j.self != nil {
		a.answerSelfJob(j, reply, err, panicked)
		return
	}
	if err != nil { // counted before the reply, so the caller sees it counted
		a.stats.requestErrors.Add(1)
	}
	a.respond(j, reply, err, panicked)
	j.p.Release() // after the reply: it may alias the arguments
	a.endRequest(false)
}

// invoke calls the handler with a context that ends at the caller's
// deadline or when the agent stops, and recovers a panic.
func (a *Agent) invoke(j job, s *slot) (reply []byte, err error, panicked bool) {
	ctx, cancel := context.WithDeadline(a.hctx, j.deadline)
	s.set(j.from, j.id, cancel)
	defer s.set(0, 0, nil)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			a.opts.Logger.Error("rpc: handler panicked", "rank", a.rank, "caller", j.from, "panic", v, "stack", string(debug.Stack()))
			reply, err, panicked = nil, fmt.Errorf("%v", v), true
		}
	}()
	reply, err = j.h(ctx, j.args)
	return reply, err, false
}

// answerSelfJob completes a call to this rank with its handler's outcome,
// unless the deadline has passed: as a remote caller, the caller then fails
// with context.DeadlineExceeded, whatever the handler returned.
func (a *Agent) answerSelfJob(j job, reply []byte, err error, panicked bool) {
	if time.Now().After(j.deadline) {
		a.endRequest(true)
		return
	}
	reply, err = a.selfResult(j, reply, err, panicked)
	a.answerSelf(j.self, reply, err)
}

// selfResult is what a call to this rank returns, as if it had crossed
// the wire: the reply copied, the error as a *HandlerError.
func (a *Agent) selfResult(j job, reply []byte, err error, panicked bool) ([]byte, error) {
	c := j.self
	switch {
	case err != nil:
		return nil, &HandlerError{Rank: a.rank, Name: c.name, Message: err.Error(), Panicked: panicked}
	case len(reply) > a.opts.MaxReplySize:
		return nil, c.fail(&SizeError{What: "reply", Size: len(reply), Limit: a.opts.MaxReplySize})
	}
	return cloneOrNil(reply), nil
}

// respond sends a handler's outcome to a remote caller, unless the caller's
// deadline has passed (it has given up) or the agent has stopped.
func (a *Agent) respond(j job, reply []byte, err error, panicked bool) {
	st := statusOK
	switch {
	case panicked:
		st, reply = statusPanic, []byte(err.Error())
	case err != nil:
		st, reply = statusError, []byte(err.Error())
	case len(reply) > a.opts.MaxReplySize:
		st, reply = statusReplyTooLarge, putPair(nil, uint64(len(reply)), uint64(a.opts.MaxReplySize))
	}
	if a.state.Load() == stateStopped || time.Now().After(j.deadline) {
		return
	}
	if a.batcher != nil && a.waiting[j.from].Load() > 0 { // more from that rank to come: answer together
		a.batcher.QueueFrame(j.from, replyFrame(j.id, st), reply)
		return
	}
	a.t.SendFrame(a.base, j.from, replyFrame(j.id, st), reply) // a lost peer needs no answer
}

// beginRequest counts a request received (or a call to this rank).
func (a *Agent) beginRequest() {
	a.active.inc()
	a.stats.requests.Add(1)
}

// endRequest counts a request answered (or given up); failed when the
// answer is an error.
func (a *Agent) endRequest(failed bool) {
	if failed {
		a.stats.requestErrors.Add(1)
	}
	a.served.Add(1)
	a.active.dec()
}
