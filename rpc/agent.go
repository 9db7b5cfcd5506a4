package rpc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Transport is the transport an Agent serves on: an
// *engine.NetTransport, or a value that embeds one (an
// *thunderbolt.Transport). Its unexported method hands NewAgent the
// transport's RPC frames; only those types have it, so passing anything
// else fails to compile.
type Transport interface {
	// Rank is this process's rank in [0, WorldSize()).
	Rank() int
	// WorldSize is the number of ranks.
	WorldSize() int
	plumb.Source
}

var _ Transport = (*engine.NetTransport)(nil)

// Handler serves one function. args is valid until the handler returns and
// must not be kept; the returned slice is sent (or, for a call from this
// rank, copied) after the handler returns and not kept either. ctx is
// cancelled when the caller's deadline passes or the agent closes; pass it
// (or a context derived from it) to nested calls so that they lend out the
// handler's worker while they wait.
type Handler func(ctx context.Context, args []byte) ([]byte, error)

// Agent states.
const (
	stateOpen    int32 = iota
	stateClosing       // Close or Shutdown: new calls refused, in-flight work finishing
	stateStopped       // done: nothing more is sent
)

// Agent serves named handlers to the other ranks of a transport's world
// and calls theirs. Every method is safe for concurrent use.
type Agent struct {
	t           plumb.Service // the transport's RPC frames
	rank, world int
	opts        Options

	funcMu sync.Mutex                         // serializes registry writers
	funcs  atomic.Pointer[map[string]Handler] // copy on write

	nextID  atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]*Call // calls waiting for their reply
	calls   sync.Pool        // *Call for the synchronous Call

	jobs    chan job      // requests waiting for a worker
	quit    chan struct{} // closed when the agent stops
	workers sync.WaitGroup
	slots   slotSet         // what each worker runs, for cancellation
	base    context.Context // parent of every handler context, cancelled on stop
	stop    context.CancelFunc
	hctx    context.Context // base, marked as belonging to this agent's handlers

	state    atomic.Int32
	shutting atomic.Bool          // Shutdown began: calls from outside handlers refused
	gone     []atomic.Bool        // by rank: that rank's agent said goodbye, and no agent there said hello since
	spinning []atomic.Bool        // by rank: a caller spins on that connection
	batcher  plumb.ServiceBatcher // t, if it can queue frames unwritten
	waiting  []atomic.Int32       // by rank: its requests queued for a worker
	spinner  plumb.ServiceSpinner // t, if it can spin, else nil
	hasWork  func() bool          // a lingering worker stops spinning
	active   activity             // calls, requests and sends not yet finished
	sent     atomic.Uint64        // requests sent (Shutdown's termination count)
	served   atomic.Uint64        // requests answered (Shutdown's termination count)
	agree    agreement            // Shutdown's protocol state
	stats    counters
	closing  sync.Once
	closed   chan struct{} // closed when Close has finished
}

// handlerKey marks the contexts this agent hands to its handlers.
type handlerKey struct{}

// NewAgent installs an agent on t and starts serving: requests are read by
// the transport's event loop and run on a pool of opts.Workers goroutines.
// A nil t fails with ErrUnsupportedTransport. A
// transport carries one agent at a time; another can be installed once
// this one is closed (before, NewAgent fails with ErrAgentExists). A new
// agent tells every other rank that it is up (HELLO, rpc/spec.md): calls
// from there that failed with ErrClosed because the agent before it had
// closed work again once that arrives.
func NewAgent(t Transport, opts Options) (*Agent, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rt, ok := plumb.ServiceOf(t)
	if !ok {
		return nil, fmt.Errorf("rpc: NewAgent over a %T: %w", t, ErrUnsupportedTransport)
	}
	a := &Agent{t: rt, rank: t.Rank(), world: t.WorldSize(), opts: o}
	a.init()
	for name, h := range o.Handlers {
		if err := a.Register(name, h); err != nil {
			a.stop()
			return nil, fmt.Errorf("rpc: Options.Handlers[%q]: %w", name, err)
		}
	}
	for range o.Workers {
		a.workers.Add(1)
		go a.serve(nil)
	}
	if err := rt.SetServiceHandler((*receiver)(a)); err != nil { // hands over early requests
		a.stop()
		close(a.quit)
		a.workers.Wait()
		return nil, err
	}
	a.sayHello()
	return a, nil
}

func (a *Agent) init() {
	empty := map[string]Handler{}
	a.funcs.Store(&empty)
	a.pending = make(map[uint64]*Call)
	a.calls.New = func() any { return newSyncCall() }
	a.jobs = make(chan job, a.opts.QueueLen)
	a.quit = make(chan struct{})
	a.closed = make(chan struct{})
	a.base, a.stop = context.WithCancel(context.Background())
	a.hctx = context.WithValue(a.base, handlerKey{}, a)
	a.gone = make([]atomic.Bool, a.world)
	a.spinning = make([]atomic.Bool, a.world)
	a.waiting = make([]atomic.Int32, a.world)
	a.batcher, _ = a.t.(plumb.ServiceBatcher)
	a.spinner, _ = a.t.(plumb.ServiceSpinner)
	a.hasWork = func() bool { return len(a.jobs) > 0 || a.state.Load() == stateStopped }
	a.agree.init(a.world)
}

// Rank returns this agent's rank.
func (a *Agent) Rank() int { return a.rank }

// WorldSize returns the number of ranks.
func (a *Agent) WorldSize() int { return a.world }

// spin lets a synchronous caller read its peer's connection while it waits
// for the reply, if no other caller does already (one spinner per peer:
// more would only take the cores the others need). It reports whether the
// call completed.
func (a *Agent) spin(c *Call) bool {
	if a.spinner == nil || c.dst == a.rank || !a.spinning[c.dst].CompareAndSwap(false, true) {
		return false
	}
	defer a.spinning[c.dst].Store(false)
	return a.spinner.SpinFrames(c.dst, c.ended)
}

// nested reports whether ctx is (derived from) one of this agent's handler
// contexts: the call is made by a handler, on a worker.
func (a *Agent) nested(ctx context.Context) bool {
	return ctx.Value(handlerKey{}) == a
}
