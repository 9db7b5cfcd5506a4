package rpc

import (
	"context"
	"time"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Call is a call in flight, started by Agent.Go. Its zero value is not
// usable.
type Call struct {
	a      *Agent
	id     uint64
	dst    int
	name   string
	nested bool // made by one of the agent's handlers, with its context

	done  chan struct{} // Go: closed on completion
	sig   chan struct{} // the synchronous Call: signalled on completion
	ended func() bool   // the synchronous Call: reports a signal in sig
	timer *time.Timer   // Go: the default timeout; Call: reused for it
	unctx func() bool   // Go: stops the context.AfterFunc

	reply []byte
	err   error
}

func newSyncCall() *Call {
	t := time.NewTimer(time.Hour)
	t.Stop()
	c := &Call{sig: make(chan struct{}, 1), timer: t}
	c.ended = func() bool { return len(c.sig) > 0 }
	return c
}

// Done returns a channel that is closed when the call completes.
func (c *Call) Done() <-chan struct{} { return c.done }

// Wait waits for the call to complete and returns its result: the reply,
// which the caller owns, or an error (see Agent.Call). A handler that
// waits for a call it started with its own context lends its worker out
// meanwhile, as Agent.Call does.
func (c *Call) Wait() ([]byte, error) {
	select {
	case <-c.done:
	default:
		if c.nested {
			defer c.a.lend()()
		}
		<-c.done
	}
	return c.reply, c.err
}

// Go starts a call of name on rank dst with args and returns at once; args
// may be reused as soon as Go returns. The call completes when the reply
// arrives, the deadline passes (ctx's, or Options.DefaultTimeout from now
// if it has none), ctx is cancelled, the peer is lost or the agent closes.
// No goroutine is held per call: thousands can be in flight.
func (a *Agent) Go(ctx context.Context, dst int, name string, args []byte) *Call {
	c := &Call{a: a, dst: dst, name: name, done: make(chan struct{})}
	deadline, own := a.deadline(ctx)
	if err := a.admit(ctx, c, args); err != nil {
		c.err = err
		close(c.done)
		return c
	}
	a.watch(ctx, c, deadline, own)
	a.dispatch(ctx, c, args, deadline)
	return c
}

// Call calls name on rank dst with args and waits for the reply, which the
// caller owns. dst may be this rank. Errors:
//   - *HandlerError: the handler returned an error or panicked;
//   - *CallError wrapping ErrFunctionNotFound, ErrBusy, ErrPeerLost,
//     ErrClosed, a *SizeError (ErrTooLarge), context.DeadlineExceeded (the
//     deadline passed; the handler's context is cancelled too) or
//     context.Canceled.
//
// A handler that makes a nested call with its own context lends its worker
// out while it waits, so that nested calls (A calls B calls A) never
// deadlock, whatever Options.Workers.
func (a *Agent) Call(ctx context.Context, dst int, name string, args []byte) ([]byte, error) {
	c := a.calls.Get().(*Call)
	c.a, c.dst, c.name = a, dst, name
	defer a.recycle(c)
	deadline, own := a.deadline(ctx)
	if err := a.admit(ctx, c, args); err != nil {
		return nil, err
	}
	a.register(c)
	a.dispatch(ctx, c, args, deadline)
	return a.await(ctx, c, deadline, own)
}

func (a *Agent) recycle(c *Call) {
	c.reply, c.err, c.name, c.nested = nil, nil, "", false
	a.calls.Put(c)
}

// deadline returns the call's deadline and whether ctx sets it.
func (a *Agent) deadline(ctx context.Context) (time.Time, bool) {
	if d, ok := ctx.Deadline(); ok {
		return d, true
	}
	return time.Now().Add(a.opts.DefaultTimeout), false
}

// await waits for a synchronous call.
func (a *Agent) await(ctx context.Context, c *Call, deadline time.Time, own bool) ([]byte, error) {
	if c.nested {
		defer a.lend()()
	} else if a.spin(c) {
		<-c.sig
		return c.reply, c.err
	}
	var timeout <-chan time.Time
	if !own {
		c.timer.Reset(time.Until(deadline))
		defer c.timer.Stop()
		timeout = c.timer.C
	}
	select {
	case <-c.sig:
		return c.reply, c.err
	case <-ctx.Done():
		a.abandon(c, ctx.Err())
	case <-timeout:
		a.expire(c, c.fail(context.DeadlineExceeded))
	}
	<-c.sig
	return c.reply, c.err
}

// watch registers an asynchronous call and arms its deadline and ctx.
func (a *Agent) watch(ctx context.Context, c *Call, deadline time.Time, own bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending[c.id] = c
	if !own {
		c.timer = time.AfterFunc(time.Until(deadline), func() { a.expire(c, c.fail(context.DeadlineExceeded)) })
	}
	if ctx.Done() != nil {
		c.unctx = context.AfterFunc(ctx, func() { a.abandon(c, ctx.Err()) })
	}
}

// register makes c pending: its reply can now complete it.
func (a *Agent) register(c *Call) {
	a.mu.Lock()
	a.pending[c.id] = c
	a.mu.Unlock()
}

// take removes call id from the pending set and returns it, or nil if it
// has completed already. With from >= 0 the call must be to rank from.
func (a *Agent) take(id uint64, from int) *Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.pending[id]
	if c == nil || from >= 0 && c.dst != from {
		return nil
	}
	delete(a.pending, id)
	return c
}

// expire completes c with err if it is still pending.
func (a *Agent) expire(c *Call, err error) {
	if a.take(c.id, -1) == c {
		c.complete(nil, err)
	}
}

// abandon completes c with its context's error if it is still pending. A
// cancelled call (as opposed to one past its deadline, which the server
// knows) is cancelled at the server too.
func (a *Agent) abandon(c *Call, err error) {
	if a.take(c.id, -1) != c {
		return
	}
	if err == context.Canceled && c.dst != a.rank {
		a.t.PostFrame(c.dst, plumb.ServiceFrame{ID: c.id, Tag: ctlCancel}, nil)
	}
	c.complete(nil, c.fail(err))
}

// fail wraps err into c's *CallError.
func (c *Call) fail(err error) error {
	return &CallError{Rank: c.dst, Name: c.name, Err: err}
}

// complete records the outcome of c, which its caller has just taken from
// the pending set (or never put there), and wakes the waiter.
func (c *Call) complete(reply []byte, err error) {
	c.reply, c.err = reply, err
	a := c.a
	a.stats.ended(err)
	a.active.dec()
	if c.sig != nil {
		c.sig <- struct{}{}
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.unctx != nil {
		c.unctx()
	}
	close(c.done)
}
