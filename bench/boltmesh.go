package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/rpc"
)

// boltEndpoint runs the workloads on a boltmesh NetTransport.
type boltEndpoint struct {
	t     *engine.NetTransport
	comm  *collective.Comm
	agent *rpc.Agent // started by the first RPC, closed at the end of the run
}

var _ Endpoint = (*boltEndpoint)(nil)

func newBoltEndpoint(t *engine.NetTransport, algorithm string) (*boltEndpoint, error) {
	var opts collective.Options
	if algorithm != "" {
		var err error
		if opts.Algorithm, err = collective.ParseAlgorithm(algorithm); err != nil {
			return nil, err
		}
	}
	comm, err := collective.New(t, opts)
	if err != nil {
		return nil, err
	}
	return &boltEndpoint{t: t, comm: comm}, nil
}

// Impl implements Endpoint.
func (e *boltEndpoint) Impl() string { return ImplBoltmesh }

// Rank implements Endpoint.
func (e *boltEndpoint) Rank() int { return e.t.Rank() }

// Ranks implements Endpoint.
func (e *boltEndpoint) Ranks() int { return e.t.WorldSize() }

// Send implements Endpoint.
func (e *boltEndpoint) Send(to int, p []byte) error { return e.t.Send(to, tagData, p) }

// RecvInto implements Endpoint.
func (e *boltEndpoint) RecvInto(from int, dst []byte) (int, error) {
	return e.t.RecvInto(from, tagData, dst)
}

// Barrier implements Endpoint.
func (e *boltEndpoint) Barrier() error { return e.t.Barrier() }

// AllReduceSum uses AllReduceBytes with ctx, not the generic AllReduce:
// the call's profile labels go over those of the context it is given,
// and AllReduce has none.
func (e *boltEndpoint) AllReduceSum(ctx context.Context, data []float32) error {
	return e.comm.AllReduceBytes(ctx, collective.Float32, collective.AsBytes(data), collective.Sum)
}

// AllReduceDeadlineSum implements deadliner, with rank 0 as the root.
func (e *boltEndpoint) AllReduceDeadlineSum(ctx context.Context, data []float32, deadline time.Time) (int, error) {
	got, err := e.comm.AllReduceDeadlineBytes(ctx, collective.Float32, collective.AsBytes(data), collective.Sum, deadline)
	return got.Count, err
}

// Gather implements rooter.
func (e *boltEndpoint) Gather(ctx context.Context, root int, seg, whole []byte, counts []int) error {
	return e.comm.GatherBytes(ctx, root, collective.Float32, seg, whole, counts)
}

// Scatter implements rooter.
func (e *boltEndpoint) Scatter(ctx context.Context, root int, whole, seg []byte, counts []int) error {
	return e.comm.ScatterBytes(ctx, root, collective.Float32, whole, seg, counts)
}

// Broadcast implements Endpoint.
func (e *boltEndpoint) Broadcast(ctx context.Context, root int, data []byte) error {
	return e.comm.BroadcastBytes(ctx, root, data)
}

// NewRegion implements Endpoint.
func (e *boltEndpoint) NewRegion(size int) (Region, error) {
	b, err := e.comm.Alloc(context.Background(), uint64(size), 0)
	if err != nil {
		return nil, fmt.Errorf("symmetric heap buffer of %d bytes (heap %d bytes): %w", size, e.t.Heap().Size(), err)
	}
	return &boltRegion{t: e.t, b: b}, nil
}

// boltRegion is a symmetric heap buffer.
type boltRegion struct {
	t *engine.NetTransport
	b engine.SymmetricBuffer
}

// Put implements Region.
func (r *boltRegion) Put(to int, src []byte) error { return r.t.Put(r.b.On(to), src) }

// Get implements Region.
func (r *boltRegion) Get(from int, dst []byte) error { return r.t.Get(r.b.On(from), dst) }

// Quiet implements Region.
func (r *boltRegion) Quiet() error { return r.t.Quiet() }

// Free implements Region.
func (r *boltRegion) Free() error { return r.t.Free(r.b) }

// Load implements Region.
func (r *boltRegion) Load(dst []byte) error {
	b, err := r.t.Bytes(r.b)
	if err == nil {
		copy(dst, b)
	}
	return err
}

// Store implements Region.
func (r *boltRegion) Store(src []byte) error {
	b, err := r.t.Bytes(r.b)
	if err == nil {
		copy(b, src)
	}
	return err
}

// rpcEcho is the name the harness's echo function is registered under.
const rpcEcho = "bench.echo"

// rpcMaxSize lifts the agent's request and reply limits (64 MiB by
// default) to the transport's default frame limit, so that any size
// --sizes allows a transport to carry is measured.
const rpcMaxSize = 1 << 30

// rpcCloseTimeout bounds the wait for calls in flight when the agent
// closes.
const rpcCloseTimeout = 10 * time.Second

// echo is the handler of rpcEcho. Returning args is allowed: the agent
// sends the reply before it releases the request.
func echo(_ context.Context, args []byte) ([]byte, error) { return args, nil }

// RPC starts, on first use, an rpc.Agent on the transport. echo goes in
// through Options.Handlers, so it is registered before the agent serves:
// a request cannot find it missing.
func (e *boltEndpoint) RPC() (RPC, error) {
	if e.agent == nil {
		a, err := rpc.NewAgent(e.t, rpc.Options{
			Handlers:       map[string]rpc.Handler{rpcEcho: echo},
			MaxRequestSize: rpcMaxSize,
			MaxReplySize:   rpcMaxSize,
		})
		if err != nil {
			return nil, fmt.Errorf("rpc agent: %w", err)
		}
		e.agent = a
	}
	return boltRPC{e.agent}, nil
}

// boltRPC is RPC on the boltmesh agent.
type boltRPC struct{ a *rpc.Agent }

// Echo implements RPC; the reply is the caller's.
func (r boltRPC) Echo(ctx context.Context, to int, args []byte) ([]byte, error) {
	return r.a.Call(ctx, to, rpcEcho, args)
}

// endRPC closes the agent, if the run started one, on every rank at once,
// and leaves the transport as the run found it: with no RPC handler and
// no RPC frame held for the next one. Closing an agent says goodbye to
// every other rank, and a goodbye that arrives after that rank's own agent
// has left is held by the transport and handed to the next agent installed
// there, which would then take this rank for closed. So every rank, once
// its agent is closed, exchanges a control message with every other (so
// that every agent is closed), then sends every other rank an RPC
// request of its own (a fence), which follows its goodbye (RPC frames keep
// their order; a control message, on another lane, does not), and drops
// every RPC frame until it has every other rank's fence.
func (e *boltEndpoint) endRPC(ctl control) error {
	if e.agent == nil {
		return nil
	}
	err := e.closeRPC()
	if err == nil {
		err = ctl.allToAll()
	}
	if err == nil {
		if rt, ok := plumb.ServiceOf(e.t); ok {
			err = e.fenceRPC(rt)
		}
	}
	if err == nil {
		// Rank 0 leaves (and closes) only once every other rank has all its
		// control messages: a star's coordinator forwards the workers' to
		// each other, and closing would drop those still in flight. The
		// others tell it straight, with nothing to forward.
		_, err = ctl.gather(nil)
	}
	return err
}

// rpcFenceTag is the Tag of endRPC's fence requests, which no agent
// sends (an agent's requests carry their name's length there).
const rpcFenceTag = 1<<32 - 1

// fenceRPC sends every other rank a fence and drops every RPC frame
// until every other rank's fence is in, within rpcCloseTimeout; it leaves
// the transport with no RPC handler.
func (e *boltEndpoint) fenceRPC(rt plumb.Service) error {
	n, me := e.t.WorldSize(), e.t.Rank()
	f := &fenceHandler{seen: make([]bool, n), left: n - 1, done: make(chan struct{}), lost: make(chan error, n)}
	if n == 1 {
		close(f.done)
	}
	if err := rt.SetServiceHandler(f); err != nil {
		return fmt.Errorf("bench: rpc fence: %w", err)
	}
	defer rt.SetServiceHandler(nil)
	ctx, cancel := context.WithTimeout(context.Background(), rpcCloseTimeout)
	defer cancel()
	for r := range n {
		if r != me {
			if err := rt.SendFrame(ctx, r, plumb.ServiceFrame{Tag: rpcFenceTag}, nil); err != nil {
				return fmt.Errorf("bench: rpc fence to rank %d: %w", r, err)
			}
		}
	}
	select {
	case <-f.done:
		return nil
	case err := <-f.lost:
		return fmt.Errorf("bench: rpc fence: %w", err)
	case <-ctx.Done():
		return fmt.Errorf("bench: rpc fence: %d ranks' fences missing: %w", f.missing(), ctx.Err())
	}
}

// fenceHandler drops every RPC frame and counts the fences (see
// fenceRPC). Lock rule: mu guards seen and left.
type fenceHandler struct {
	mu   sync.Mutex
	seen []bool
	left int
	done chan struct{} // closed once every other rank's fence is in
	lost chan error    // a peer lost, or the transport closed
}

// HandleFrame implements plumb.ServiceHandler.
func (f *fenceHandler) HandleFrame(from int, fr plumb.ServiceFrame, p plumb.ServicePayload) {
	p.Release()
	if fr.Reply || fr.Tag != rpcFenceTag {
		return // a goodbye, or an answer nobody waits for: dropped
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if from >= 0 && from < len(f.seen) && !f.seen[from] && f.left > 0 {
		f.seen[from] = true
		if f.left--; f.left == 0 {
			close(f.done)
		}
	}
}

// ServicePeerLost implements plumb.ServiceHandler.
func (f *fenceHandler) ServicePeerLost(from int, err error) {
	select {
	case f.lost <- fmt.Errorf("rank %d: %w", from, err):
	default:
	}
}

func (f *fenceHandler) missing() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.left
}

// closeRPC closes the agent, if any, on this rank alone.
func (e *boltEndpoint) closeRPC() error {
	if e.agent == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), rpcCloseTimeout)
	defer cancel()
	err := e.agent.Close(ctx)
	e.agent = nil
	if err != nil {
		return fmt.Errorf("bench: close rpc agent: %w", err)
	}
	return nil
}
