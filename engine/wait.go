package engine

import (
	"context"
	"time"

	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/spin"
)

// The wait policy. Every wait of the transport for what a peer brings (a
// receive's message, a neighbour's part of an exchange in the pair's
// mailbox, a neighbour's barrier signal) runs the same two phases:
//
//  1. Spin, for the peer's spin budget (Options.Spin, shortened by the
//     peer's gauge where spins there keep running out: internal/spin),
//     without sleeping: a receive drives the peer's link itself
//     (spinUntil, recv.go); a mailbox wait looks at the mailbox
//     (spinSite), spin.LookStep looks between pauses. Both pause as
//     internal/spin's Pacer says: the budget since bytes last moved, and
//     the yields (the core given up between polls on a crowded machine,
//     and past Options.SpinYield every spin.Every elsewhere).
//  2. Sleep (sleep) until the posted receive completes, what the site
//     watches is in (a mailbox's part or signal) (a WAKE frame from a neighbour that saw this
//     side asleep rouses it to look), or the give-up set fires.
//
// The give-up set (waitOpts) is one for every wait: ctx's end (cancel),
// a timeout, and a change of the membership view that ends the wait
// (changeCause: a peer lost, a peer closed before the barrier or leaving
// the receives on the owned range unanswerable). Both phases check it; what arrived by the
// time one fires wins over it.
//
// Lock rule: a wait holds no lock of the transport while it spins or
// sleeps (a mailbox exchange holds its mailbox's xmu, and a barrier
// round barrierState.mu, which only other waits of the same kind take).

// waitOpts says how a wait gives up, and what a receive accepts.
type waitOpts struct {
	cancel     <-chan struct{} // a context's Done, or nil
	ctx        context.Context // its Done is cancel; nil without a context
	timeout    time.Duration   // > 0: give up after it with ErrTimeout
	anyLost    bool            // give up when any peer is lost (the owned range: its owner needs every rank)
	epoch      uint64          // barrier: give up when a peer closes before completing it
	ownerClose bool            // the owned range: give up when a peer closed leaving it unanswerable (closedInRange)
	try        bool            // take a queued message or fail with errNotQueued; never wait
	leave      bool            // give up the wait for a message being read in once inflight closes, or at leaveAt (plumb.ErrInFlight)
	inflight   <-chan struct{} // with leave: closes when the wait for a message being read in ends
	leaveAt    time.Time       // with leave and no inflight: when it ends (zero: never)
	meta       uint32          // with checkMeta: the Aux the message must carry
	checkMeta  bool
	op         string
}

// ctxWait is the waitOpts of an operation op bounded by ctx.
func ctxWait(ctx context.Context, op string) waitOpts {
	return waitOpts{cancel: ctx.Done(), ctx: ctx, op: op}
}

// siteKind is what a wait watches besides its posted receive.
type siteKind uint8

const (
	siteNone    siteKind = iota // only the receive
	siteLook                    // what the lent range's owner looks at (plumb.Waiting.Look)
	siteBarrier                 // a neighbour's barrier signal in the mailbox
)

// waitSite is where a wait looks for what it waits for besides its
// receive. A value, so that a wait allocates nothing.
type waitSite struct {
	kind siteKind
	look func(tries int) (bool, error) // siteLook
	wake <-chan struct{}               // siteLook: a WAKE for it
	mb   *linkshm.Mailbox              // siteBarrier
	v    uint64                        // siteBarrier: the signal waited for
}

// arrived reports whether what s waits for is in, without taking it, or
// an error that ends the wait (siteLook: the owner's).
func (s *waitSite) arrived() (bool, error) {
	switch s.kind {
	case siteLook:
		return s.look(0)
	case siteBarrier:
		return s.mb.Reached(s.v), nil
	}
	return false, nil
}

// wakeup returns the channel a neighbour's WAKE for s arrives on, or nil.
func (s *waitSite) wakeup() <-chan struct{} {
	switch s.kind {
	case siteLook:
		return s.wake
	case siteBarrier:
		return s.mb.BarWake()
	}
	return nil
}

// lookFor looks up to tries times for what s waits for: found, or an
// error that ends the wait (the mailbox closed: this transport's Close;
// siteLook: the owner's).
func (s *waitSite) lookFor(p *peer, tries int, op string) (found bool, err error) {
	switch s.kind {
	case siteLook:
		return s.look(tries)
	case siteBarrier:
		for range tries {
			got, ok := s.mb.Signalled()
			if !ok {
				return false, &PeerError{Op: op, Rank: p.rank, Err: ErrClosed}
			}
			if got >= s.v {
				return true, nil
			}
		}
	}
	return false, nil
}

// spinSite is a site's spin: it looks for what s waits for until it is
// found, budget has passed (found false, err nil), a look fails, or the
// give-up set fires. A barrier's last look once it fires wins over it;
// a siteLook's is its owner's.
func (t *NetTransport) spinSite(p *peer, s *waitSite, budget time.Duration, w waitOpts) (found bool, err error) {
	if budget <= 0 {
		return false, nil
	}
	crowded := t.topo.crowded.Load()
	every := spin.LookStep(crowded)
	var pace spin.Pacer
	pace.Start(budget, t.opts.SpinYield, false, crowded)
	for {
		if found, err := s.lookFor(p, every, w.op); found || err != nil {
			return found, err
		}
		var end error
		select {
		case <-w.cancel:
			end = w.ctx.Err()
		default:
			end = t.changeCause(t.view(), w)
		}
		if end != nil {
			// What came since the last look wins: the neighbour, done
			// with the step, may have closed at once.
			found := s.kind == siteBarrier && s.mb.Reached(s.v)
			return found, ifNot(found, end)
		}
		if !pace.Pause(false) {
			return false, nil
		}
	}
}

// sleep is a wait's second phase: it blocks until r, the receive posted
// for what the wait waits for, completes (done), what s waits for is in
// the mailbox (done false, cause nil), or the give-up set fires (cause:
// ctx's error, ErrTimeout once timeout fires, or the view's changeCause).
// A look at the site that fails is a cause too (siteLook: the owner's).
func (t *NetTransport) sleep(p *peer, r *recvReq, s *waitSite, w waitOpts, timeout <-chan time.Time) (done bool, cause error) {
	var changed <-chan struct{} // the view's next, if a change may end w
	if w.waitsOnView() {
		cur := t.view()
		changed, cause = cur.Next, t.changeCause(cur, w)
	}
	wake := s.wakeup()
	for cause == nil {
		in, err := s.arrived()
		if in {
			return false, nil
		}
		if cause = err; cause != nil {
			break
		}
		select {
		case <-r.done:
			return true, nil
		case <-wake:
		case <-w.cancel:
			cause = w.ctx.Err()
		case <-timeout:
			cause = ErrTimeout
		case <-changed:
			cur := t.view()
			changed, cause = cur.Next, t.changeCause(cur, w)
		}
	}
	return false, cause
}

// ifNot returns err unless done.
func ifNot(done bool, err error) error {
	if done {
		return nil
	}
	return err
}

// spinBudget is Options.Spin as settled: spin.CrowdedSpin once the machine
// turned out crowded.
func (t *NetTransport) spinBudget() time.Duration { return time.Duration(t.topo.spin.Load()) }
