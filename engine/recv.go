package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/internal/spin"
)

// Recv implements Transport.
func (t *NetTransport) Recv(from, tag int) ([]byte, error) {
	if err := checkTag(tag); err != nil {
		return nil, err
	}
	_, b, err := t.recv(from, uint32(tag), nil, false, waitOpts{op: "recv"})
	return b, err
}

// RecvInto implements Transport.
func (t *NetTransport) RecvInto(from, tag int, dst []byte) (int, error) {
	if err := checkTag(tag); err != nil {
		return 0, err
	}
	n, _, err := t.recv(from, uint32(tag), dst, true, waitOpts{op: "recv"})
	return n, err
}

// RecvTimeout implements Transport.
func (t *NetTransport) RecvTimeout(from, tag int, d time.Duration) ([]byte, error) {
	if err := checkTag(tag); err != nil {
		return nil, err
	}
	if d <= 0 {
		d = time.Nanosecond
	}
	_, b, err := t.recv(from, uint32(tag), nil, false, waitOpts{op: "recv", timeout: d})
	return b, err
}

// RecvContext implements Transport.
func (t *NetTransport) RecvContext(ctx context.Context, from, tag int) ([]byte, error) {
	if err := checkTag(tag); err != nil {
		return nil, err
	}
	_, b, err := t.recv(from, uint32(tag), nil, false, ctxWait(ctx, "recv"))
	return b, err
}

// RecvIntoContext implements Transport.
func (t *NetTransport) RecvIntoContext(ctx context.Context, from, tag int, dst []byte) (int, error) {
	if err := checkTag(tag); err != nil {
		return 0, err
	}
	n, _, err := t.recv(from, uint32(tag), dst, true, ctxWait(ctx, "recv"))
	return n, err
}

// recv receives one message from rank from under any tag: into dst when
// into is set, else as a new slice.
func (t *NetTransport) recv(from int, tag uint32, dst []byte, into bool, w waitOpts) (int, []byte, error) {
	if err := t.checkRank(from); err != nil {
		return 0, nil, err
	}
	var err error
	if w.ctx != nil && !w.try {
		if err = w.ctx.Err(); err != nil {
			return 0, nil, err
		}
	}
	p := t.peer(from)
	r := t.newRecv(from, tag, dst, into, w)
	posted, err := p.match(r, w.try, w.checkMeta, w.op)
	if posted {
		err = t.wait(p, r, w)
	}
	return t.recvDone(r, err, w)
}

// recvDone ends receive r, whose wait ended with err (nil: r's own
// outcome stands), and recycles it.
func (t *NetTransport) recvDone(r *recvReq, err error, w waitOpts) (int, []byte, error) {
	if errors.Is(err, plumb.ErrInFlight) {
		return 0, nil, err // r and its buffer are the transport's until the message is in
	}
	n, data := r.n, r.data
	if err == nil {
		err = r.err
	}
	if err == nil && w.checkMeta && r.aux != w.meta {
		err = &plumb.MetaError{Rank: r.from, Tag: uint32(r.tag) - ownedTagBase, Want: w.meta, Got: r.aux}
	}
	t.recycle(r)
	return n, data, err
}

// recycle returns a receive request that nothing refers to any more to
// the pool.
func (t *NetTransport) recycle(r *recvReq) {
	r.reset()
	t.pools.reqs.Put(r)
}

// newRecv returns a receive request from the pool.
func (t *NetTransport) newRecv(from int, tag uint32, dst []byte, into bool, w waitOpts) *recvReq {
	r := t.pools.reqs.Get().(*recvReq)
	r.into, r.dst, r.from, r.tag = into, dst, from, int(tag)
	r.owned, r.meta = w.checkMeta, w.meta
	return r
}

// wait blocks until r completes or w says to give up. It first drives the
// peer's connection itself for up to Options.Spin, then sleeps until the
// event loop completes r. It returns a non-nil error only when it gave up
// before r was claimed; otherwise r's own outcome stands.
func (t *NetTransport) wait(p *peer, r *recvReq, w waitOpts) error {
	var start time.Time // read only for a timeout: a clock read costs as much as a poll
	if w.timeout > 0 {
		start = time.Now()
	}
	if done := t.spinOn(p, r); done {
		p.spin.Note(false)
		return nil
	}
	spun, asleep := p.spin.Budget(t.spinBudget()), time.Now()
	var timeout <-chan time.Time
	if w.timeout > 0 {
		if r.timer == nil {
			r.timer = time.NewTimer(time.Hour)
		}
		r.timer.Reset(w.timeout - time.Since(start))
		defer r.timer.Stop()
		timeout = r.timer.C
	}
	done, cause := t.sleep(p, r, &waitSite{}, w, timeout)
	if done {
		p.spin.Slept(spun, asleep, t.spinBudget())
		return nil
	}
	if w.leave {
		return t.leave(p, r, cause, w)
	}
	return t.withdraw(p, r, cause)
}

// leave is withdraw for a wait that may give up even while the message is
// being read in: it waits for the bytes until inflight closes, and then r
// is left to the transport, which completes it when the message is in (or
// the peer is lost) with nobody waiting, and the error wraps plumb.ErrInFlight.
func (t *NetTransport) leave(p *peer, r *recvReq, cause error, w waitOpts) error {
	p.mu.Lock()
	if p.m.withdraw(r) {
		p.mu.Unlock()
		return cause
	}
	p.mu.Unlock()
	if w.inflight == nil && !w.leaveAt.IsZero() {
		return t.leaveAt(p, r, cause, w.leaveAt)
	}
	select {
	case <-r.done:
		return nil
	case <-w.inflight:
		return &plumb.InFlightError{Rank: p.rank, Err: cause}
	}
}

// leaveAt is leave's wait for the bytes of a message being read in, until
// a time rather than a channel: on r's own timer, so that it allocates
// nothing once r has one.
func (t *NetTransport) leaveAt(p *peer, r *recvReq, cause error, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		select {
		case <-r.done:
			return nil
		default:
			return &plumb.InFlightError{Rank: p.rank, Err: cause}
		}
	}
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	defer r.timer.Stop()
	select {
	case <-r.done:
		return nil
	case <-r.timer.C:
		return &plumb.InFlightError{Rank: p.rank, Err: cause}
	}
}

// spinOn is wait's spin on r, with reqSpun set while it may be
// completed (see reqSpun): it reports whether r is done, its token (if
// one was sent) taken.
func (t *NetTransport) spinOn(p *peer, r *recvReq) bool {
	for {
		s := r.state.Load()
		if s == reqDone {
			<-r.done // done before the flag: its token
			return true
		}
		if r.state.CompareAndSwap(s, s|reqSpun) {
			break
		}
	}
	if t.spin(p, &r.state, laneData) {
		return true // done with the flag set: no token
	}
	for {
		s := r.state.Load()
		if s == reqDone {
			return true
		}
		if r.state.CompareAndSwap(s, s&^reqSpun) {
			return false // the completer will send the token
		}
	}
}

// spin drives p's connection itself until the request whose state it
// watches completes or no byte has
// arrived from p for Options.Spin: a message, small or large, that arrives
// at wire speed is read straight from the socket by the waiting goroutine
// with no wake-up in its path, and a receive that waits for a slow peer
// burns at most Spin of CPU before it sleeps. It yields now and then
// (spin.Pacer), so that it does not starve goroutines of its own process.
func (t *NetTransport) spin(p *peer, state *atomic.Uint32, on lane) bool {
	return t.spinUntil(p, on, func() bool { return state.Load() == reqDone })
}

// spinUntil is spin for any condition: it drives the lanes of p's link
// that bring what it waits for (on: laneData for a receive, laneCtl for a
// get, credit, a CTS or RPC) until done reports true or no byte has
// arrived on them for Options.Spin, and reports done's last answer. Each
// poll is a system call: driving only the lanes that bring what it waits
// for keeps a spin's latency that of one read.
//
// A spin that ends done stops polling with link.polled (the goroutine is
// likely to poll again soon, and a neighbour's data pipe need not ask for
// a bell yet); one that gives up, about to sleep, with polling, which
// asks for one at once.
func (t *NetTransport) spinUntil(p *peer, on lane, done func() bool) bool {
	if !p.up() || t.spinBudget() <= 0 {
		return done()
	}
	p.link.polling(on, true)
	if t.spinPolls(p, on, done) {
		p.link.polled(on)
		return true
	}
	p.link.polling(on, false)
	return false
}

// spinPolls is spinUntil's loop, with the lanes' polling on: it polls,
// and pauses every few polls (internal/spin's Pacer: the clock read, the
// budget since bytes last moved, the yields).
func (t *NetTransport) spinPolls(p *peer, on lane, done func() bool) bool {
	cheap, crowded := p.can().cheap, t.topo.crowded.Load()
	var pace spin.Pacer
	pace.Start(p.spin.Budget(t.spinBudget()), t.opts.SpinYield, cheap, crowded)
	step := spin.PollStep(cheap, crowded)
	seen, moved := p.link.bytesRead(on), false
	for i := 1; ; i++ {
		p.link.poll(on)
		if done() {
			return true
		}
		if now := p.link.bytesRead(on); now != seen {
			seen, moved = now, true
		}
		if i%step != 0 {
			continue
		}
		if !pace.Pause(moved) {
			return false
		}
		moved = false
	}
}

// withdraw takes r back after a give-up. A receive whose payload is already
// being read cannot be withdrawn: it waits for that read, which ends with
// the message or with the peer's loss.
func (t *NetTransport) withdraw(p *peer, r *recvReq, cause error) error {
	p.mu.Lock()
	if p.m.withdraw(r) {
		p.mu.Unlock()
		return cause
	}
	p.mu.Unlock()
	<-r.done
	return nil
}
