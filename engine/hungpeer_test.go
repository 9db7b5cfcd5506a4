package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/childproc"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// hungWithin bounds how long the other ranks may take to drop a peer whose
// process stopped (SIGSTOP: its sockets stay open and its kernel still
// acknowledges, so only the heartbeats can tell), with the default
// Options. Options.KeepAlive documents 2.75-4.25 KeepAlive periods after
// the stop; this leaves a wide margin for a loaded machine, and is still
// below the 15 s the drop took at least with the former default KeepAlive
// of 5 s.
const hungWithin = 10 * time.Second

// hungTag is the tag of the operations that wait on the stopped peer.
const hungTag = 6

// hungOp is an operation that waits on a stopped peer, and how it ended.
type hungOp struct {
	what string
	err  error
	at   time.Time
}

// hungOps runs operations on a stopped peer and collects how they end.
type hungOps struct {
	ctx     context.Context // bounds every operation at 3*hungWithin
	results chan hungOp
	n       int
}

func newHungOps(t *testing.T) *hungOps {
	ctx, cancel := context.WithTimeout(context.Background(), 3*hungWithin)
	t.Cleanup(cancel)
	return &hungOps{ctx: ctx, results: make(chan hungOp, 8)}
}

// start runs f, which must block until the peer is lost.
func (h *hungOps) start(what string, f func(ctx context.Context) error) {
	h.n++
	go func() {
		err := f(h.ctx)
		h.results <- hungOp{what, err, time.Now()}
	}()
}

// requireLost waits for every operation started and checks that it failed
// with ErrPeerLost naming victim (and, if silent, with cause
// ErrNoHeartbeat) within hungWithin of stopped; it logs how long each took.
func (h *hungOps) requireLost(t *testing.T, stopped time.Time, victim int, silent func(what string) bool) {
	t.Helper()
	for range h.n {
		res := <-h.results
		took := res.at.Sub(stopped)
		requirePeerLost(t, res.err, victim)
		if silent(res.what) && !errors.Is(res.err, engine.ErrNoHeartbeat) {
			t.Errorf("%s: got %v, want cause ErrNoHeartbeat", res.what, res.err)
		}
		if took > hungWithin {
			t.Errorf("%s: failed %v after the stop, want at most %v", res.what, took, hungWithin)
		}
		t.Logf("%s: peer lost %v after the stop: %v", res.what, took.Round(time.Millisecond), res.err)
	}
}

// stopChild lets heartbeats pass for a random while, so that the
// connections are as in a long run (idle, the last thing heard a
// heartbeat, at any point of its period: at most 1.25 KeepAlive), then
// stops the child's process and returns when it did.
func stopChild(t *testing.T, child *childproc.Proc) time.Time {
	t.Helper()
	time.Sleep(time.Second + rand.N(1250*time.Millisecond))
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// requireTalk checks that from can still send to to, bytes compared.
func requireTalk(t *testing.T, ts []*engine.NetTransport, from, to int) {
	t.Helper()
	msg := pattern(from, to, hungTag, 0, 1<<20)
	sent := make(chan error, 1)
	go func() { sent <- ts[from].Send(to, hungTag, msg) }()
	got, err := ts[to].RecvTimeout(from, hungTag, hungWithin)
	if err == nil {
		err = check(got, from, to, hungTag, 0, 1<<20)
	}
	if serr := <-sent; err == nil {
		err = serr
	}
	if err != nil {
		t.Fatalf("rank %d to rank %d after the stop: %v", from, to, err)
	}
}

// TestPeerStoppedDropped stops a rank's process (SIGSTOP) while rank 0
// waits for a message from it on an idle connection and rank 1 both waits
// for one and sends it more than its socket buffers hold: every operation
// fails with ErrPeerLost, cause ErrNoHeartbeat, naming the stopped rank,
// within hungWithin, and the two survivors still talk to each other.
func TestPeerStoppedDropped(t *testing.T) {
	const victim = 2
	lns, addrs := listeners(t, 3)
	child := startChild(t, "heap-idle", victim, lns[victim], addrs)
	ts := make([]*engine.NetTransport, victim)
	errs := make([]error, victim)
	var wg sync.WaitGroup
	for r := range victim {
		wg.Go(func() { ts[r], errs[r] = engine.FromListener(r, 3, lns[r], addrs, engine.Options{}) })
	}
	wg.Wait()
	for r := range victim {
		if ts[r] != nil {
			defer ts[r].Close()
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	big := pattern(1, victim, hungTag, 0, 64<<20) // built now: it must not delay the timed send

	ops := newHungOps(t)
	stopped := stopChild(t, child)
	for r, tr := range ts {
		ops.start(fmt.Sprintf("rank %d recv", r), func(ctx context.Context) error {
			_, err := tr.RecvContext(ctx, victim, hungTag)
			return err
		})
	}
	ops.start("rank 1 send", func(ctx context.Context) error { return ts[1].SendContext(ctx, victim, hungTag, big) })
	ops.requireLost(t, stopped, victim, func(string) bool { return true })
	requireTalk(t, ts, 0, 1)
}

// TestStarWorkerStopped stops a star worker's process while the
// coordinator and the other worker wait for a message from it, and that
// worker sends to it until the coordinator holds it back: the coordinator
// drops the stopped worker (ErrNoHeartbeat) within hungWithin and tells
// the other worker, whose receive fails with ErrPeerLost too; the
// held-back sender is not dropped, and the rest of the star still works.
func TestStarWorkerStopped(t *testing.T) {
	const victim = 2
	lns, addrs := meshtest.Listeners(t, 1)
	addrs = append(addrs, "", "")
	ts := make([]*engine.NetTransport, victim)
	var cerr, werr error
	var wg sync.WaitGroup
	wg.Go(func() { ts[0], cerr = engine.CoordinatorListen(3, lns[0], engine.Options{}) })
	wg.Go(func() { ts[1], werr = engine.WorkerDial(1, 3, addrs[0], engine.Options{}) })
	child := startChildEnv(t, "star-worker", victim, nil, addrs, nil)
	wg.Wait()
	for _, tr := range ts {
		if tr != nil {
			defer tr.Close()
		}
	}
	if cerr != nil || werr != nil {
		t.Fatalf("coordinator: %v; worker 1: %v", cerr, werr)
	}
	msg := pattern(1, victim, hungTag, 0, 8<<20) // built now: it must not delay the timed sends

	ops := newHungOps(t)
	stopped := stopChild(t, child)
	for r, tr := range ts {
		ops.start(fmt.Sprintf("rank %d recv", r), func(ctx context.Context) error {
			_, err := tr.RecvContext(ctx, victim, hungTag)
			return err
		})
	}
	// Past MaxQueuedBytes (64 MiB) waiting to be forwarded to the stopped
	// worker, the coordinator stops reading rank 1. (Sends to a worker the
	// coordinator reported gone are dropped by the coordinator, not
	// failed, so they stop once the receives are over.)
	over := make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		for {
			select {
			case <-over:
				sent <- nil
				return
			default:
			}
			if err := ts[1].SendContext(ops.ctx, victim, hungTag, msg); err != nil {
				sent <- err
				return
			}
		}
	}()
	ops.requireLost(t, stopped, victim, func(what string) bool { return what == "rank 0 recv" })
	close(over)
	if err := <-sent; err != nil && !errors.Is(err, engine.ErrPeerLost) {
		t.Errorf("rank 1's sends to the stopped worker: %v", err)
	}
	requireTalk(t, ts, 1, 0)
	requireTalk(t, ts, 0, 1)
}
