package rpc

import (
	"context"
	"time"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// goodbyeWait bounds how long Close tries to tell a peer that it leaves.
const goodbyeWait = 200 * time.Millisecond

// Close stops the agent. New calls from this rank and new requests from
// any rank are refused at once with ErrClosed (except nested calls made by
// handlers still running, with their context); calls in flight and running
// or queued handlers get until ctx ends to finish. Then handler contexts
// are cancelled, every call still pending fails with ErrClosed, the other
// ranks are told (their calls still pending here fail with ErrClosed), and
// the agent leaves the transport, which can take a new one.
//
// Close returns nil once everything finished in time, with every goroutine
// of the agent gone; or ctx's error if it had to cut work short: a handler
// that ignores its cancelled context then keeps its worker goroutine until
// it returns (its result is dropped). Close is idempotent: later calls wait
// for the first.
func (a *Agent) Close(ctx context.Context) error {
	first := false
	a.closing.Do(func() { first = true })
	if !first {
		select {
		case <-a.closed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	a.state.CompareAndSwap(stateOpen, stateClosing)
	err := a.active.wait(ctx)
	a.halt()
	if err == nil {
		a.workers.Wait()
	}
	close(a.closed)
	return err
}

// halt stops everything still going and leaves the transport.
func (a *Agent) halt() {
	a.state.Store(stateStopped)
	a.stop() // handler contexts, and replies blocked on a full socket
	a.failAll()
	a.sayGoodbye()
	a.t.SetServiceHandler(nil)
	close(a.quit)
	a.dropQueued()
}

// failAll fails every pending call with ErrClosed.
func (a *Agent) failAll() {
	a.mu.Lock()
	calls := make([]*Call, 0, len(a.pending))
	for id, c := range a.pending {
		delete(a.pending, id)
		calls = append(calls, c)
	}
	a.mu.Unlock()
	for _, c := range calls {
		c.complete(nil, c.fail(ErrClosed))
	}
}

// sayGoodbye tells every other rank that this agent answers no more
// requests. It follows every reply this agent sent, so a call pending on
// this rank when the goodbye arrives will never be answered.
func (a *Agent) sayGoodbye() { a.tellAll(ctlGoodbye) }

// sayHello tells every other rank that this agent is up, after any
// goodbye of an agent before it on this transport: a rank whose agent
// took that goodbye (late, or made again since) calls this rank again.
func (a *Agent) sayHello() { a.tellAll(ctlHello) }

// tellAll sends the control frame tag to every other rank, trying each
// for up to goodbyeWait in all (a lost peer needs none).
func (a *Agent) tellAll(tag uint32) {
	ctx, cancel := context.WithTimeout(context.Background(), goodbyeWait)
	defer cancel()
	for r := range a.world {
		if r != a.rank {
			a.t.SendFrame(ctx, r, plumb.ServiceFrame{Tag: tag}, nil)
		}
	}
}

// dropQueued ends the requests left in the queue; their callers were told
// by the goodbye (or, for calls from this rank, by failAll).
func (a *Agent) dropQueued() {
	for {
		select {
		case j := <-a.jobs:
			j.p.Release()
			a.endRequest(true)
		default:
			return
		}
	}
}
