package collective_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// TestAbandonedCallsInARow: rank 0 gives up two allreduces in a row (its
// ctx has ended) before the other ranks begin the first: each of them
// must fail both calls (ErrAbandoned), not wait in the first for a part
// that will never come, and every rank's third call, without a ctx, must
// work. Rank 0 sent nothing in either call, so its errors must not say
// that the call may have completed elsewhere, and no rank completes them.
func TestAbandonedCallsInARow(t *testing.T) {
	for _, n := range []int{2, 4} {
		for _, size := range []int{16, 1 << 20} {
			t.Run(fmt.Sprintf("n=%d/size=%d", n, size), func(t *testing.T) {
				ts, cs := newCommsClosable(t, n, collective.Options{})
				dead, cancel := context.WithCancel(context.Background())
				cancel()
				gaveUp := make(chan struct{}) // rank 0 has given up both calls
				errs := make([][2]error, n)
				done := make(chan error, 1)
				go func() {
					done <- onAll(n, func(r int) error {
						ctx := context.Background()
						if r == 0 {
							ctx = dead
						} else {
							<-gaveUp
						}
						for i := range errs[r] {
							errs[r][i] = cs[r].AllReduceBytes(ctx, collective.Float32, make([]byte, size), collective.Sum)
						}
						if r == 0 {
							close(gaveUp)
						}
						return checkedAllReduce(cs[r], context.Background(), r, n, size)
					})
				}()
				select {
				case err := <-done:
					if err != nil {
						t.Error(err)
					}
				case <-time.After(20 * time.Second):
					closeAll(ts)
					<-done
					t.Fatalf("the ranks still waited 20 s on; the abandoned calls' errors: %v", errs)
				}
				for r := range n {
					for i, err := range errs[r] {
						switch {
						case r == 0 && (!errors.Is(err, context.Canceled) || errors.Is(err, collective.ErrMayHaveCompleted)):
							t.Errorf("rank 0 call %d: got %v, want context.Canceled alone", i, err)
						case r != 0 && !errors.Is(err, collective.ErrAbandoned):
							t.Errorf("rank %d call %d: got %v, want ErrAbandoned", r, i, err)
						}
					}
				}
			})
		}
	}
}

// newCommsClosable is newComms that also returns the transports, which a
// test closes (closeAll) to end calls that hang before it fails: the
// Comms' cleanup waits for the calls in progress.
func newCommsClosable(t testing.TB, n int, opts collective.Options) ([]*engine.NetTransport, []*collective.Comm) {
	t.Helper()
	ts := meshtest.Mesh(t, n, engine.Options{HeapSize: 1 << 20})
	cs := make([]*collective.Comm, n)
	for r := range n {
		cs[r] = mustNew(t, ts[r], opts)
	}
	t.Cleanup(func() {
		for r := range n {
			cs[r].Close()
		}
	})
	return ts, cs
}

// closeAll closes every transport of ts.
func closeAll(ts []*engine.NetTransport) {
	for _, tr := range ts {
		tr.Close()
	}
}

// checkedAllReduce runs a float32 Sum allreduce of size bytes on rank r
// of n and checks its result.
func checkedAllReduce(c *collective.Comm, ctx context.Context, r, n, size int) error {
	v := make([]float32, size/4)
	for i := range v {
		v[i] = float32(r + i%7)
	}
	if err := c.AllReduceBytes(ctx, collective.Float32, collective.AsBytes(v), collective.Sum); err != nil {
		return fmt.Errorf("rank %d: allreduce: %w", r, err)
	}
	for i, got := range v {
		if want := float32(n*(n-1)/2 + n*(i%7)); got != want {
			return fmt.Errorf("rank %d: allreduce: element %d is %v, want %v", r, i, got, want)
		}
	}
	return nil
}

// stepTransport is a rank's transport that counts the operations of a
// call on its lent range (plumb.Wire: each send started, each wait for a
// send, a receive or a neighbour's mailbox part) and runs hooks around
// them, so that a test can end a rank's ctx after exactly k of them, or
// hold a rank before its k-th. Set the hooks and reset the count between
// calls only. It is the rank's transport, and wraps its lent range, which
// New finds on it (plumb.WireOf): its own plumb.Carrier, shallower than
// the NetTransport's, hands out the wrapper.
type stepTransport struct {
	*engine.NetTransport
	plumb.Wire
	plumb.Carrier
	ops    int         // operations begun in this call
	before func(k int) // runs as operation k begins (k from 0)
	after  func(k int) // runs once operation k has returned
}

// newStepTransport wraps tr.
func newStepTransport(tr *engine.NetTransport) *stepTransport {
	w, ok := plumb.WireOf(tr)
	if !ok {
		panic("no lent range for a *engine.NetTransport")
	}
	s := &stepTransport{NetTransport: tr, Wire: w}
	plumb.Attach(&s.Carrier, s, nil)
	return s
}

func (s *stepTransport) step(op func()) {
	k := s.ops
	s.ops++
	if s.before != nil {
		s.before(k)
	}
	op()
	if s.after != nil {
		s.after(k)
	}
}

func (s *stepTransport) Send(ctx context.Context, to int, tag, meta uint32, p []byte, m plumb.SendMode) (h plumb.Handle, err error) {
	s.step(func() { h, err = s.Wire.Send(ctx, to, tag, meta, p, m) })
	return h, err
}

func (s *stepTransport) Wait(peer int, h plumb.Handle, w plumb.Waiting) (n int, found bool, err error) {
	if !h.Live() && w.Site == nil {
		return s.Wire.Wait(peer, h, w) // a look at the world, not an operation
	}
	s.step(func() { n, found, err = s.Wire.Wait(peer, h, w) })
	return n, found, err
}

// stepConfig is an allreduce whose steps TestCtxEndsAtEveryStep walks.
type stepConfig struct {
	name string
	star bool // over a star (else a mesh)
	n    int
	size int // bytes of float32
	opts collective.Options
}

// TestCtxEndsAtEveryStep: rank 0's ctx ends at every step of an
// allreduce, at 2 and 4 ranks, for each algorithm and data path: after
// exactly k of its transport operations have returned, for k = 0 (before
// the call) to all of them; and while it waits in operation k, its
// message sent, with the other ranks held before theirs. Whatever the
// step, the outcomes obey the documented semantics (partial.go): a rank
// that succeeds has the right sum; if any rank succeeds, every rank that
// failed says the call may have completed elsewhere (ErrMayHaveCompleted);
// a ctx that ended before the call fails it on every rank, rank 0's error
// saying no more than context.Canceled; and every rank's next two calls,
// without a ctx and with one, work.
func TestCtxEndsAtEveryStep(t *testing.T) {
	var configs []stepConfig
	for _, n := range []int{2, 4} {
		configs = append(configs,
			stepConfig{"doubling", false, n, 64, collective.Options{}},
			stepConfig{"doubling-pieces", false, n, 16 << 10, collective.Options{Algorithm: collective.AlgorithmDoubling, Chunk: 4 << 10}},
			stepConfig{"ring", false, n, 32 << 10, collective.Options{Algorithm: collective.AlgorithmRing, Chunk: 4 << 10}},
			stepConfig{"rendezvous", false, n, 2 << 20, collective.Options{Algorithm: collective.AlgorithmDoubling, Chunk: 4 << 20}})
	}
	configs = append(configs, stepConfig{"star", true, 4, 64, collective.Options{}})
	for _, cfg := range configs {
		t.Run(fmt.Sprintf("%s/n=%d", cfg.name, cfg.n), func(t *testing.T) { testCtxSteps(t, cfg) })
	}
}

func testCtxSteps(t *testing.T, cfg stepConfig) {
	n := cfg.n
	var ts []*engine.NetTransport
	if cfg.star {
		ts = meshtest.Star(t, n, engine.Options{HeapSize: 1 << 20})
	} else {
		ts = meshtest.Mesh(t, n, engine.Options{HeapSize: 1 << 20})
	}
	sts := make([]*stepTransport, n)
	cs := make([]*collective.Comm, n)
	for r := range n {
		sts[r] = newStepTransport(ts[r])
		cs[r] = mustNew(t, sts[r], cfg.opts)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	// A clean call counts rank 0's operations.
	if err := onAll(n, func(r int) error { return checkedAllReduce(cs[r], context.Background(), r, n, cfg.size) }); err != nil {
		t.Fatal(err)
	}
	ops := sts[0].ops
	disagreed := 0
	for _, held := range []bool{false, true} {
		for k := 0; k <= ops; k++ {
			if held && k == ops {
				break // nothing to wait in
			}
			name := fmt.Sprintf("k=%d held=%v", k, held)
			errs, ok := stepCall(t, ts, sts, cs, cfg, k, held)
			if !ok {
				t.Fatalf("%s: the ranks still waited 20 s on; errors: %v", name, errs)
			}
			if checkStepOutcome(t, name, errs, k == 0 && !held) {
				disagreed++
			}
			for r := range n {
				sts[r].ops, sts[r].before, sts[r].after = 0, nil, nil
			}
			for _, withCtx := range []bool{false, true} {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if withCtx {
					ctx, cancel = context.WithTimeout(ctx, 20*time.Second)
				}
				err := onAll(n, func(r int) error { return checkedAllReduce(cs[r], ctx, r, n, cfg.size) })
				cancel()
				if err != nil {
					t.Fatalf("%s: after it (ctx %v): %v", name, withCtx, err)
				}
			}
		}
	}
	t.Logf("%d operations on rank 0; %d of the calls succeeded on some ranks and failed on others", ops, disagreed)
}

// stepCall runs one allreduce on every rank, ending rank 0's ctx at step k
// (see TestCtxEndsAtEveryStep), and returns every rank's error; ok is false
// if the ranks were still in it after 20 s (the transports are then
// closed).
func stepCall(t *testing.T, ts []*engine.NetTransport, sts []*stepTransport, cs []*collective.Comm, cfg stepConfig, k int, held bool) (errs []error, ok bool) {
	n := cfg.n
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	for r := range n {
		sts[r].ops = 0
	}
	switch {
	case k == 0 && !held:
		cancel()
	case !held:
		sts[0].after = func(i int) {
			if i == k-1 {
				cancel()
			}
		}
	default:
		sts[0].before = func(i int) {
			if i == k {
				time.AfterFunc(20*time.Millisecond, cancel)
			}
		}
		for r := 1; r < n; r++ {
			sts[r].before = func(i int) {
				if i == k {
					<-release
				}
			}
		}
	}
	errs = make([]error, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = onAll(n, func(r int) error {
			c := context.Background()
			if r == 0 {
				c = ctx
			}
			errs[r] = checkedAllReduce(cs[r], c, r, n, cfg.size)
			if r == 0 {
				close(release)
			}
			return nil
		})
	}()
	select {
	case <-done:
		return errs, true
	case <-time.After(20 * time.Second):
		closeAll(ts)
		<-done
		return errs, false
	}
}

// checkStepOutcome checks the outcomes of one call of
// TestCtxEndsAtEveryStep, where rank 0's ctx had ended before the call if
// dead is set, and reports whether some ranks succeeded and others
// failed.
func checkStepOutcome(t *testing.T, name string, errs []error, dead bool) (disagreed bool) {
	t.Helper()
	succeeded, failed := 0, 0
	for _, err := range errs {
		if err == nil {
			succeeded++
		} else {
			failed++
		}
	}
	for r, err := range errs {
		switch {
		case err == nil:
		case r == 0 && !errors.Is(err, context.Canceled):
			t.Errorf("%s: rank 0: got %v, want context.Canceled", name, err)
		case r != 0 && !errors.Is(err, collective.ErrAbandoned):
			t.Errorf("%s: rank %d: got %v, want ErrAbandoned", name, r, err)
		case succeeded > 0 && !errors.Is(err, collective.ErrMayHaveCompleted):
			t.Errorf("%s: rank %d failed (%v) without ErrMayHaveCompleted while %d ranks completed the call", name, r, err, succeeded)
		}
	}
	if dead {
		if errors.Is(errs[0], collective.ErrMayHaveCompleted) {
			t.Errorf("%s: rank 0, whose ctx had ended before the call: %v, want context.Canceled alone", name, errs[0])
		}
		if succeeded > 0 {
			t.Errorf("%s: %d ranks completed a call whose rank 0 sent nothing", name, succeeded)
		}
	}
	return succeeded > 0 && failed > 0
}

// TestDeadCtxEveryCollective: rank 0 calls each collective with a ctx
// that has already ended, the others without one. Where every rank needs
// every rank's data (AllReduce, AllGather, ReduceScatter, AllToAll), rank
// 0 sends nothing, the call fails on every rank, and rank 0's error says
// no more than context.Canceled; in the others some ranks may complete
// without rank 0, and its error wraps ErrMayHaveCompleted. Either way, a
// rank that failed while another completed says so, and the next call
// works.
func TestDeadCtxEveryCollective(t *testing.T) {
	const n, k = 3, 4 // ranks, elements per rank
	counts := []int{k, k, k}
	calls := []struct {
		name     string
		needsAll bool
		call     func(c *collective.Comm, ctx context.Context, r int) error
	}{
		{"allreduce", true, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.AllReduceBytes(ctx, collective.Int32, make([]byte, 4*k), collective.Sum)
		}},
		{"allgather", true, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.AllGatherBytes(ctx, collective.Int32, make([]byte, 4*k), make([]byte, 4*k*n), counts)
		}},
		{"reducescatter", true, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.ReduceScatterBytes(ctx, collective.Int32, make([]byte, 4*k*n), counts, collective.Sum)
		}},
		{"alltoall", true, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.AllToAllBytes(ctx, collective.Int32, make([]byte, 4*k*n), counts, make([]byte, 4*k*n), counts)
		}},
		{"broadcast", false, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.BroadcastBytes(ctx, 1, make([]byte, 16))
		}},
		{"reduce", false, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.ReduceToBytes(ctx, 1, collective.Int32, make([]byte, 4*k), collective.Sum)
		}},
		{"gather", false, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.GatherBytes(ctx, 1, collective.Int32, make([]byte, 4*k), make([]byte, 4*k*n), counts)
		}},
		{"scatter", false, func(c *collective.Comm, ctx context.Context, r int) error {
			return c.ScatterBytes(ctx, 1, collective.Int32, make([]byte, 4*k*n), make([]byte, 4*k), counts)
		}},
	}
	cs := newComms(t, n, collective.Options{})
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range calls {
		errs := callAll(t, cs, func(ctx context.Context, r int) error {
			if r == 0 {
				ctx = dead
			}
			return tc.call(cs[r], ctx, r)
		})
		succeeded := 0
		for _, err := range errs {
			if err == nil {
				succeeded++
			}
		}
		if !errors.Is(errs[0], context.Canceled) || errors.Is(errs[0], collective.ErrMayHaveCompleted) == tc.needsAll {
			t.Errorf("%s: rank 0: %v", tc.name, errs[0])
		}
		if tc.needsAll && succeeded > 0 {
			t.Errorf("%s: %d ranks completed a call rank 0 sent nothing of", tc.name, succeeded)
		}
		for r, err := range errs {
			if err != nil && succeeded > 0 && !errors.Is(err, collective.ErrMayHaveCompleted) {
				t.Errorf("%s: rank %d failed (%v) without ErrMayHaveCompleted while %d ranks completed", tc.name, r, err, succeeded)
			}
		}
		checkNextCall(t, cs)
	}
}

// TestSendCtxEnds: a rank whose collective send waits for a receiver that
// never takes it (a Gather segment past the eager limit, the root not in
// the call) fails once its ctx ends, with the ctx's error; before, the
// transport's "send canceled" came back instead, which matched neither
// context.DeadlineExceeded nor context.Canceled. The root then fails that
// call as abandoned, and the next one works.
func TestSendCtxEnds(t *testing.T) {
	cs := newComms(t, 2, collective.Options{})
	const elems = 512 << 10 // 2 MiB of float32
	counts := []int{elems, elems}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := cs[1].GatherBytes(ctx, 0, collective.Float32, make([]byte, 4*elems), nil, counts)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Gather whose root never came: %v, want context.DeadlineExceeded", err)
	}
	// The root's first Gather is the call rank 1 gave up.
	if err := cs[0].GatherBytes(context.Background(), 0, collective.Float32, make([]byte, 4*elems), make([]byte, 8*elems), counts); !errors.Is(err, collective.ErrAbandoned) {
		t.Fatalf("the root's Gather that rank 1 gave up: %v, want ErrAbandoned", err)
	}
	err = onAll(2, func(r int) error {
		return cs[r].GatherBytes(context.Background(), 0, collective.Float32, make([]byte, 4*elems), make([]byte, 8*elems), counts)
	})
	if err != nil {
		t.Fatal(err)
	}
}
