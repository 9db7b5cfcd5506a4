package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The acceptor is a rank's listener, during its mesh's formation and for
// Options.LateJoinWindow after.
//
// The accept loop never gives up while the listener is open: an Accept
// error other than the listener's closing (descriptors exhausted, EMFILE
// or ENFILE; a connection aborted; anything else) is logged once and
// retried with backoff, so a rank that ran out of descriptors, say to a
// flood of idle connections, accepts its peers again once they are freed.
// Each connection shakes hands in its own goroutine (serve), bounded by
// Options.HandshakeTimeout, so a silent or hostile one holds up no other,
// and the mesh does not wait for those still under way once every rank
// has joined. After formation, every slot is taken: a late dialer that
// proves the key is refused with ErrSlotTaken (it learns that another
// process took its place) rather than finding the port closed.
//
// shutdown closes the listener and every handshake under way and waits
// for their goroutines; it runs when formation fails, when the window
// ends, or at Close, whichever comes first.
type acceptor struct {
	t    *NetTransport
	ln   net.Listener
	want int // (rank, stream) slots to fill

	wg       sync.WaitGroup // serve goroutines
	loopDone chan struct{}  // closed when loop returns
	stop     closer         // closed when shutdown begins
	linger   *time.Timer    // runs shutdown when LateJoinWindow ends
	warned   bool           // an Accept error was logged (loop only)

	mu     sync.Mutex
	joined map[[2]int]string     // (rank, stream) -> the address it joined from
	conns  map[net.Conn]struct{} // handshakes under way
	joins  int                   // slots whose connection is registered with the event loop
	in     map[int]int           // rank -> its streams registered with the event loop
	err    error                 // the first join that failed after its handshake
	once   sync.Once
	done   chan struct{} // closed once every slot has joined, or err is set
}

// closer is a channel closed once.
type closer struct {
	ch   chan struct{}
	once sync.Once
}

// acceptPeers accepts until every higher rank has joined (every worker,
// for a star's coordinator) or ctx ends. It owns ln: on failure it closes
// it; on success it keeps accepting late dialers for LateJoinWindow.
func (t *NetTransport) acceptPeers(ctx context.Context, ln net.Listener) error {
	t.warnIfKeyless(ln.Addr().String())
	a := &acceptor{
		t: t, ln: ln, want: (t.world - 1 - t.rank) * t.streams(),
		loopDone: make(chan struct{}), stop: closer{ch: make(chan struct{})},
		joined: make(map[[2]int]string), conns: make(map[net.Conn]struct{}), in: make(map[int]int), done: make(chan struct{}),
	}
	go a.loop()
	select {
	case <-a.done:
		if err := a.failure(); err != nil {
			a.shutdown()
			return err
		}
		t.door.late = a
		if w := t.opts.LateJoinWindow; w > 0 {
			a.linger = time.AfterFunc(w, a.shutdown)
		} else {
			a.shutdown()
		}
		return nil
	case <-ctx.Done():
		a.shutdown()
		return a.missing(ctx.Err())
	}
}

// missing is the error of a formation that ended with err before every
// higher rank joined: how many ranks joined with all their streams, and
// which did not (with how many of their streams did, if any).
func (a *acceptor) missing(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, per := a.t, a.t.streams()
	full, absent := 0, []string{}
	for r := t.rank + 1; r < t.world; r++ {
		switch n := a.in[r]; {
		case n == per:
			full++
		case len(absent) == maxNamed:
			absent = append(absent, "...")
		case len(absent) > maxNamed:
		case n == 0:
			absent = append(absent, strconv.Itoa(r))
		default:
			absent = append(absent, fmt.Sprintf("%d (%d of %d streams)", r, n, per))
		}
	}
	return fmt.Errorf("boltmesh: rank %d: %d of %d higher ranks joined within %v (not joined: %s): %w", t.rank, full, t.world-1-t.rank, t.opts.DialTimeout, strings.Join(absent, ", "), err)
}

// maxNamed bounds the ranks a formation error names.
const maxNamed = 8

// Accept backoff after an error: from acceptBackoffMin, doubling, to
// acceptBackoffMax.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

func (a *acceptor) loop() {
	defer close(a.loopDone)
	var delay time.Duration
	for {
		nc, err := a.ln.Accept()
		if err == nil {
			delay = 0
			a.track(nc)
			a.wg.Go(func() { a.serve(nc) })
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
		delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
		a.warnAccept(err)
		select {
		case <-a.stop.ch:
			return
		case <-time.After(delay):
		}
	}
}

// warnAccept logs the first Accept error of this listener.
func (a *acceptor) warnAccept(err error) {
	if a.warned {
		return
	}
	a.warned = true
	msg := "boltmesh: accepting a connection failed; retrying with backoff (logged once)"
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		msg = "boltmesh: out of file descriptors accepting a connection; retrying with backoff until some are freed (logged once; raise the limit, e.g. ulimit -n)"
	}
	a.t.opts.Logger.Warn(msg, "rank", a.t.rank, "listener", a.ln.Addr().String(), "err", err)
}

func (a *acceptor) track(nc net.Conn) {
	a.mu.Lock()
	a.conns[nc] = struct{}{}
	a.mu.Unlock()
}

func (a *acceptor) untrack(nc net.Conn) {
	a.mu.Lock()
	delete(a.conns, nc)
	a.mu.Unlock()
}

// shutdown stops accepting: it closes the listener and every handshake
// under way, and waits for their goroutines. Safe to call more than once,
// from any goroutine; later calls wait for the first.
func (a *acceptor) shutdown() {
	a.stop.once.Do(func() {
		close(a.stop.ch)
		a.ln.Close()
		<-a.loopDone
		a.mu.Lock()
		for nc := range a.conns {
			nc.Close()
		}
		a.mu.Unlock()
		a.wg.Wait()
	})
}

// close ends the late-join window now (Close).
func (a *acceptor) close() {
	if a.linger != nil {
		a.linger.Stop()
	}
	a.shutdown()
}

func (a *acceptor) stopping() bool {
	select {
	case <-a.stop.ch:
		return true
	default:
		return false
	}
}

func (a *acceptor) failure() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// claim reserves (rank, stream) for a dialer that proved the key, from
// addr, or says why it cannot have it: another connection has it.
func (a *acceptor) claim(rank, stream int, addr string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if prev, ok := a.joined[[2]int{rank, stream}]; ok {
		why := fmt.Sprintf("rank %d stream %d is already connected, from %s: another process joined as rank %d", rank, stream, prev, rank)
		if len(a.t.opts.MeshKey) == 0 {
			why += "; the mesh has no key, so anyone who reaches this port can: set one (Options.MeshKey, BOLTMESH_KEY, --key-file)"
		}
		return why
	}
	a.joined[[2]int{rank, stream}] = addr
	return ""
}

func (a *acceptor) unclaim(rank, stream int) {
	a.mu.Lock()
	delete(a.joined, [2]int{rank, stream})
	a.mu.Unlock()
}

func (a *acceptor) serve(nc net.Conn) {
	defer a.untrack(nc)
	t := a.t
	addr := nc.RemoteAddr().String()
	hc, err := newHsConn(nc, t, 0)
	rank, stream, claimed := -1, 0, false
	if err == nil {
		rank, stream, err = hc.Accept(func(r, s int) string {
			why := a.claim(r, s, addr)
			claimed = why == ""
			return why
		})
	}
	var m medium
	if err == nil {
		m, err = meetMedium(t, hc, rank, stream, false)
	}
	if err == nil {
		err = t.adopt(nc, rank, stream, m)
		a.finish(rank, err)
		return
	}
	if claimed {
		a.unclaim(rank, stream)
	}
	nc.Close()
	if !a.stopping() { // a handshake cut short by shutdown was not refused
		t.reportReject(addr, rank, err)
	}
}

func (a *acceptor) finish(rank int, err error) {
	a.mu.Lock()
	if err != nil && a.err == nil {
		a.err = err
	}
	if err == nil {
		a.joins++
		a.in[rank]++
	}
	n := a.joins
	a.mu.Unlock()
	if err != nil || n == a.want {
		a.once.Do(func() { close(a.done) })
	}
}

// reportReject tells Options.OnReject of every refused connection, and
// Options.Logger of some (t.door.refusals): a flood of strangers must not
// flood the log.
func (t *NetTransport) reportReject(addr string, rank int, err error) {
	var he *HandshakeError
	if !errors.As(err, &he) {
		he = &HandshakeError{Addr: addr, Rank: rank, Local: true, Reason: "handshake I/O", Err: err}
	}
	if ok, left := t.door.refusals.Allow(time.Now()); ok {
		args := []any{"rank", t.rank, "from", addr, "claimed_rank", rank, "err", he}
		if left > 0 {
			args = append(args, "refusals_not_logged", left)
		}
		t.opts.Logger.Warn("boltmesh: refused connection", args...)
	}
	if t.opts.OnReject != nil {
		t.opts.OnReject(he)
	}
}
