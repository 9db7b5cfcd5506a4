package rpc

import (
	"context"
	"sync"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Shutdown stops the whole group gracefully, like PyTorch's
// rpc.shutdown(graceful=True): every rank calls it, and it returns once
// every rank has called it and no call is in flight anywhere, then closes
// this agent (see Close). Meanwhile the agent keeps serving, and handlers
// may still make nested calls, but calls from outside handlers are refused
// with ErrClosed.
//
// Termination is detected with counters (Mattern's method): each rank,
// once idle, reports the requests it sent and the requests it served to
// rank 0, which answers "again" until two consecutive rounds show equal,
// unchanged totals: no request was in flight and none was sent in between.
// A rank lost or closed meanwhile (rank 0, for the other ranks) or the end
// of ctx fails it; the agent is closed all the same.
func (a *Agent) Shutdown(ctx context.Context) error {
	a.shutting.Store(true)
	err := a.agreeDone(ctx)
	if cerr := a.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// agreeDone runs rounds until rank 0 finds the group quiet.
func (a *Agent) agreeDone(ctx context.Context) error {
	var last [2]uint64
	for round := uint64(1); ; round++ {
		if err := a.active.wait(ctx); err != nil || a.world == 1 {
			return err
		}
		sent, done := a.sent.Load(), a.served.Load()
		var ok bool
		var err error
		if a.rank == 0 {
			ok, err = a.judge(ctx, round, sent, done, &last)
		} else {
			ok, err = a.report(ctx, round, sent, done)
		}
		if ok || err != nil {
			return err
		}
	}
}

// judge (rank 0) collects round's reports, decides and tells every rank.
func (a *Agent) judge(ctx context.Context, round, sent, done uint64, last *[2]uint64) (bool, error) {
	sent, done, err := a.agree.collect(ctx, round, sent, done)
	if err != nil {
		return false, err
	}
	ok := sent == done && round > 1 && *last == [2]uint64{sent, done}
	*last = [2]uint64{sent, done}
	var aux uint32
	if ok {
		aux = 1
	}
	for r := 1; r < a.world; r++ {
		if err := a.t.SendFrame(ctx, r, plumb.ServiceFrame{ID: round, Tag: ctlVerdict, Aux: aux}, nil); err != nil {
			return false, err
		}
	}
	return ok, nil
}

// report (ranks other than 0) sends round's counts and waits for the
// verdict.
func (a *Agent) report(ctx context.Context, round, sent, done uint64) (bool, error) {
	if err := a.t.SendFrame(ctx, 0, plumb.ServiceFrame{ID: round, Tag: ctlReport}, putPair(nil, sent, done)); err != nil {
		return false, err
	}
	return a.agree.await(ctx, round)
}

// agreement is the state of Shutdown's protocol, fed by control frames.
type agreement struct {
	mu      sync.Mutex
	wake    chan struct{} // buffered 1: something changed
	reports []tally       // rank 0: each rank's latest report
	round   uint64        // the latest verdict received
	ok      bool          // its outcome
	err     error         // a rank that matters was lost or closed
	leftBy  int           // err came from this rank's GOODBYE (left), plus one; 0 if not
}

type tally struct{ round, sent, done uint64 }

func (g *agreement) init(world int) {
	g.wake = make(chan struct{}, 1)
	g.reports = make([]tally, world)
}

func (g *agreement) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *agreement) report(from int, round, sent, done uint64) {
	g.mu.Lock()
	if from > 0 && from < len(g.reports) {
		g.reports[from] = tally{round, sent, done}
	}
	g.mu.Unlock()
	g.signal()
}

func (g *agreement) verdict(round uint64, ok bool) {
	g.mu.Lock()
	g.round, g.ok = round, ok
	g.mu.Unlock()
	g.signal()
}

// lost records that rank from is gone, if it matters to self: rank 0
// needs every rank, the others need rank 0.
func (g *agreement) lost(self, from int, err error) { g.fail(self, from, err, 0) }

// fail is lost and left: err, if from matters to self and no error came
// before it; leftBy is left's mark, or 0.
func (g *agreement) fail(self, from int, err error, leftBy int) {
	if self != 0 && from != 0 {
		return
	}
	g.mu.Lock()
	if g.err == nil {
		g.err, g.leftBy = err, leftBy
	}
	g.mu.Unlock()
	g.signal()
}

// left records that rank from's agent closed (its GOODBYE), as lost
// does, until its next agent says HELLO (back).
func (g *agreement) left(self, from int) {
	g.fail(self, from, &CallError{Rank: from, Name: "shutdown", Err: ErrClosed}, from+1)
}

// back undoes left for rank from, whose new agent said HELLO: a GOODBYE
// of an agent before it does not fail this agent's Shutdown.
func (g *agreement) back(from int) {
	g.mu.Lock()
	if g.leftBy == from+1 {
		g.err, g.leftBy = nil, 0
	}
	g.mu.Unlock()
	g.signal()
}

// collect waits for every rank's report of round and returns the totals.
func (g *agreement) collect(ctx context.Context, round, sent, done uint64) (uint64, uint64, error) {
	for {
		g.mu.Lock()
		s, d, all := sent, done, true
		for _, t := range g.reports[1:] {
			all = all && t.round == round
			s, d = s+t.sent, d+t.done
		}
		err := g.err
		g.mu.Unlock()
		if err != nil {
			return 0, 0, err
		}
		if all {
			return s, d, nil
		}
		if err := g.sleep(ctx); err != nil {
			return 0, 0, err
		}
	}
}

// await waits for the verdict of round.
func (g *agreement) await(ctx context.Context, round uint64) (bool, error) {
	for {
		g.mu.Lock()
		got, ok, err := g.round == round, g.ok, g.err
		g.mu.Unlock()
		if got { // before err: rank 0 may leave right after the verdict
			return ok, nil
		}
		if err != nil {
			return false, err
		}
		if err := g.sleep(ctx); err != nil {
			return false, err
		}
	}
}

func (g *agreement) sleep(ctx context.Context) error {
	select {
	case <-g.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
