package rpc

import (
	"errors"
	"fmt"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// receiver is the Agent as the transport's plumb.ServiceHandler. Its methods
// run on the transport's event loop (or a goroutine making progress in its
// place): they never block, and answer what they can at once with PostFrame.
type receiver Agent

var (
	_ plumb.ServiceHandler = (*receiver)(nil)
	_ plumb.ServiceFilter  = (*receiver)(nil)
)

// maxErrorText bounds the error text of a reply, and a control frame's
// payload, that the agent reads; longer ones are discarded unread.
const maxErrorText = 64 << 10

// Accept implements plumb.ServiceFilter: a payload the agent would
// refuse is discarded unread, whatever its size. A request above
// MaxRequestSize is then refused (its length is in f.Dropped), a reply
// above MaxReplySize fails its call, and a reply nobody waits for is
// dropped.
func (r *receiver) Accept(from int, f plumb.ServiceFrame, n uint64) bool {
	a := (*Agent)(r)
	switch {
	case !f.Reply && f.Tag >= ctlBase:
		return n <= maxErrorText
	case !f.Reply:
		return n <= uint64(a.requestLimit(a.rank))
	case f.Error && n > maxErrorText, !f.Error && n > uint64(a.opts.MaxReplySize):
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.pending[f.ID]
	return c != nil && c.dst == from
}

// HandleFrame implements plumb.ServiceHandler.
func (r *receiver) HandleFrame(from int, f plumb.ServiceFrame, p plumb.ServicePayload) {
	a := (*Agent)(r)
	switch {
	case f.Reply:
		a.onReply(from, f, p)
	case f.Tag >= ctlBase:
		a.onControl(from, f, p)
	default:
		a.onRequest(from, f, p)
	}
}

// ServicePeerLost implements plumb.ServiceHandler: every call pending on rank from
// fails.
func (r *receiver) ServicePeerLost(from int, err error) {
	a := (*Agent)(r)
	sentinel := ErrPeerLost
	if errors.Is(err, engine.ErrClosed) {
		sentinel = ErrClosed
	}
	a.failTo(from, sentinel, err)
	a.agree.lost(a.rank, from, err)
}

// onReply completes the call a reply answers; a reply to a call that has
// completed already (timed out, cancelled) is dropped.
func (a *Agent) onReply(from int, f plumb.ServiceFrame, p plumb.ServicePayload) {
	c := a.take(f.ID, from)
	if c == nil {
		p.Release()
		return
	}
	reply, err := a.decode(c, f, p)
	c.complete(reply, err)
}

// decode returns a reply's result, releasing p unless the result keeps it.
func (a *Agent) decode(c *Call, f plumb.ServiceFrame, p plumb.ServicePayload) ([]byte, error) {
	b := p.Bytes()
	if f.Dropped > 0 {
		p.Release()
		if f.Error {
			return nil, c.fail(fmt.Errorf("%w: an error reply of %d bytes", ErrProtocol, f.Dropped))
		}
		return nil, c.fail(&SizeError{What: "reply", Size: int(f.Dropped), Limit: a.opts.MaxReplySize})
	}
	if !f.Error {
		if len(b) > a.opts.MaxReplySize {
			p.Release()
			return nil, c.fail(&SizeError{What: "reply", Size: len(b), Limit: a.opts.MaxReplySize})
		}
		return own(p), nil
	}
	defer p.Release()
	switch st := status(f.Aux); st {
	case statusError, statusPanic:
		return nil, &HandlerError{Rank: c.dst, Name: c.name, Message: string(b), Panicked: st == statusPanic}
	case statusNotFound:
		return nil, c.fail(ErrFunctionNotFound)
	case statusBusy:
		return nil, c.fail(ErrBusy)
	case statusClosed:
		return nil, c.fail(ErrClosed)
	case statusRequestTooLarge, statusReplyTooLarge:
		size, limit, ok := getPair(b)
		if !ok {
			return nil, c.fail(fmt.Errorf("%w: reply status %d with %d bytes, not a size and a limit", ErrProtocol, f.Aux, len(b)))
		}
		what := "reply"
		if st == statusRequestTooLarge {
			what = "request"
		}
		return nil, c.fail(&SizeError{What: what, Size: int(size), Limit: int(limit)})
	}
	return nil, c.fail(fmt.Errorf("%w: reply status %d: %s", ErrProtocol, f.Aux, b))
}

// ownCopyMax is the largest reply copied out of the transport's pooled
// buffer; a larger one is handed to the caller as it is (the pool loses
// that buffer, which costs less than copying it).
const ownCopyMax = 4 << 10

// own returns p's bytes as a slice the caller owns.
func own(p plumb.ServicePayload) []byte {
	b := p.Bytes()
	if len(b) > ownCopyMax {
		return b
	}
	out := cloneOrNil(b)
	p.Release()
	return out
}

// onRequest admits a request: it is queued for a worker, or answered at
// once when it cannot run (closed, malformed, too large, unknown, busy).
func (a *Agent) onRequest(from int, f plumb.ServiceFrame, p plumb.ServicePayload) {
	if a.gone[from].Load() {
		a.gone[from].Store(false) // a new agent there
		a.agree.back(from)
	}
	a.beginRequest()
	b := p.Bytes()
	n := int(f.Tag)
	switch st := a.state.Load(); {
	case st == stateStopped, st == stateClosing:
		// Answer even when stopped: the caller may have taken our goodbye
		// for an earlier agent's and be waiting (an answer to a call it
		// already failed is ignored).
		a.refuse(from, f.ID, p, statusClosed, nil)
		return
	case f.Dropped > 0:
		a.refuse(from, f.ID, p, statusRequestTooLarge, putPair(nil, f.Dropped, uint64(a.requestLimit(a.rank))))
		return
	case n == 0 || n > len(b):
		a.refuse(from, f.ID, p, statusBadRequest, nil)
		return
	case len(b) > a.requestLimit(a.rank):
		a.refuse(from, f.ID, p, statusRequestTooLarge, putPair(nil, uint64(len(b)), uint64(a.requestLimit(a.rank))))
		return
	}
	h := a.lookup(b[:n])
	if h == nil {
		a.refuse(from, f.ID, p, statusNotFound, nil)
		return
	}
	deadline := time.Now().Add(time.Duration(f.Aux) * time.Millisecond)
	if !a.enqueue(job{from: from, id: f.ID, h: h, p: p, args: b[n:], deadline: deadline}) {
		a.refuse(from, f.ID, p, statusBusy, nil)
	}
}

// refuse answers a request that will not run, without blocking.
func (a *Agent) refuse(from int, id uint64, p plumb.ServicePayload, st status, detail []byte) {
	p.Release()
	if st == statusBusy {
		a.stats.busy.Add(1)
	}
	a.stats.requestErrors.Add(1)                    // before the answer, so the caller sees it counted
	a.t.PostFrame(from, replyFrame(id, st), detail) // a lost peer needs no answer
	a.endRequest(false)
}

// failTo fails every call pending on rank to.
func (a *Agent) failTo(to int, sentinel, cause error) {
	var failed []*Call
	a.mu.Lock()
	for id, c := range a.pending {
		if c.dst == to {
			delete(a.pending, id)
			failed = append(failed, c)
		}
	}
	a.mu.Unlock()
	for _, c := range failed {
		c.complete(nil, &CallError{Rank: to, Name: c.name, Err: sentinel, Cause: cause})
	}
}

// onControl handles the agents' own frames.
func (a *Agent) onControl(from int, f plumb.ServiceFrame, p plumb.ServicePayload) {
	defer p.Release()
	switch f.Tag {
	case ctlCancel:
		a.slots.cancel(from, f.ID, false)
	case ctlGoodbye:
		a.slots.cancel(from, 0, true) // nobody there waits for the answers
		a.gone[from].Store(true)
		a.failTo(from, ErrClosed, nil)
		a.agree.left(a.rank, from)
	case ctlHello:
		a.gone[from].Store(false)
		a.agree.back(from)
	case ctlReport:
		if sent, done, ok := getPair(p.Bytes()); ok {
			a.agree.report(from, f.ID, sent, done)
		}
	case ctlVerdict:
		a.agree.verdict(f.ID, f.Aux == 1)
	}
}
