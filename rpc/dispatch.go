package rpc

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// admit checks a new call, gives it an id and counts it as active. A
// refused call is counted as failed and gets its error.
func (a *Agent) admit(ctx context.Context, c *Call, args []byte) error {
	a.stats.started()
	c.nested = a.nested(ctx)
	if err := a.check(c, args); err != nil {
		a.stats.ended(err)
		return err
	}
	c.id = a.nextID.Add(1)
	a.active.inc()
	return nil
}

func (a *Agent) check(c *Call, args []byte) error {
	st := a.state.Load()
	switch {
	case st == stateStopped, (st == stateClosing || a.shutting.Load()) && !c.nested:
		return c.fail(ErrClosed)
	case c.dst < 0 || c.dst >= a.world:
		return c.fail(&engine.UnknownRankError{Rank: c.dst, NumRanks: a.world})
	case len(c.name) == 0 || len(c.name) > MaxNameLen:
		return c.fail(ErrBadName)
	case len(c.name)+len(args) > a.requestLimit(c.dst):
		return c.fail(&SizeError{What: "request", Size: len(c.name) + len(args), Limit: a.requestLimit(c.dst)})
	case c.dst != a.rank && a.gone[c.dst].Load():
		return c.fail(ErrClosed)
	}
	return nil
}

// dispatch sends a registered call's request, or queues it here for a call
// to this rank.
func (a *Agent) dispatch(ctx context.Context, c *Call, args []byte, deadline time.Time) {
	switch {
	case c.dst == a.rank:
		a.callSelf(c, args, deadline)
	case a.gone[c.dst].Load(): // said goodbye after check, maybe before register
		a.expire(c, c.fail(ErrClosed))
	default:
		a.send(ctx, c, args, deadline)
	}
}

// batchMax is the largest request sendBatched takes (it copies it).
const batchMax = 4 << 10

// sendBatched queues a small request, lets the other runnable goroutines
// run once (callers that are about to send queue theirs meanwhile), then
// writes whatever is queued for rank to: concurrent callers' requests
// share a writev, and a lone caller pays one yield. Every caller flushes
// after queueing, so no request is ever left waiting.
// A request the peer has no credit for goes out with SendFrame, which waits
// for it.
func (a *Agent) sendBatched(ctx context.Context, to int, f plumb.ServiceFrame, p []byte) error {
	if err := a.batcher.QueueFrame(to, f, p); err != nil {
		if errors.Is(err, engine.ErrNoCredit) {
			return a.t.SendFrame(ctx, to, f, p)
		}
		return err
	}
	runtime.Gosched()
	a.batcher.FlushFrames(to)
	return nil
}

// send writes the request: one frame whose payload is the name followed by
// the arguments.
func (a *Agent) send(ctx context.Context, c *Call, args []byte, deadline time.Time) {
	bb := ioloop.GetBuffer(len(c.name) + len(args))
	copy(bb.B[copy(bb.B, c.name):], args)
	a.active.inc() // until sent is counted: the reply may come first
	f := requestFrame(c.id, c.name, time.Until(deadline))
	var err error
	if a.batcher != nil && len(bb.B) <= batchMax {
		err = a.sendBatched(ctx, c.dst, f, bb.B)
	} else {
		err = a.t.SendFrame(ctx, c.dst, f, bb.B)
	}
	ioloop.PutBuffer(bb)
	if err == nil {
		a.sent.Add(1)
	}
	a.active.dec()
	if err != nil {
		a.expire(c, c.sendErr(err))
	}
}

// requestLimit is the largest request (name and arguments) rank dst
// takes: Options.MaxRequestSize, or less where dst's transport holds less
// (plumb.Service.RequestMax; not yet known: SendFrame checks it).
func (a *Agent) requestLimit(dst int) int {
	limit := a.opts.MaxRequestSize
	if m, ok := a.t.RequestMax(dst); ok && m < uint64(limit) {
		limit = int(m)
	}
	return limit
}

// sendErr turns a transport error into the call's error: a request that
// its receiver's transport cannot hold into a *SizeError.
func (c *Call) sendErr(err error) error {
	if se, ok := errors.AsType[*plumb.RequestSizeError](err); ok {
		return &SizeError{What: "request", Size: int(se.Size), Limit: int(se.Limit)}
	}
	e := &CallError{Rank: c.dst, Name: c.name, Err: err}
	switch {
	case errors.Is(err, engine.ErrPeerLost):
		e.Err, e.Cause = ErrPeerLost, err
	case errors.Is(err, engine.ErrClosed):
		e.Err, e.Cause = ErrClosed, err
	case errors.Is(err, frame.ErrTooLarge):
		e.Err, e.Cause = ErrTooLarge, err
	}
	return e
}

// callSelf serves a call to this rank as a request from it: the same
// lookup, queue and worker pool, without the transport. The arguments are
// copied, as they would be by the transport.
func (a *Agent) callSelf(c *Call, args []byte, deadline time.Time) {
	a.sent.Add(1)
	a.beginRequest()
	if a.state.Load() != stateOpen {
		a.answerSelf(c, nil, c.fail(ErrClosed))
		return
	}
	h := (*a.funcs.Load())[c.name]
	if h == nil {
		a.answerSelf(c, nil, c.fail(ErrFunctionNotFound))
		return
	}
	j := job{from: a.rank, id: c.id, h: h, args: cloneOrNil(args), deadline: deadline, self: c}
	if !a.enqueue(j) {
		a.answerSelf(c, nil, c.fail(ErrBusy))
	}
}

// answerSelf completes a call to this rank, if still pending, and ends its
// request.
func (a *Agent) answerSelf(c *Call, reply []byte, err error) {
	a.endRequest(err != nil)
	if a.take(c.id, a.rank) == c {
		c.complete(reply, err)
	}
}

func cloneOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
