package collective

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Transport is the transport a Comm runs over: an *engine.NetTransport,
// or a value that embeds one (an *thunderbolt.Transport). Its
// unexported method hands New the transport's collective tag space,
// messaging apart from users' tags; only those types have it, so passing
// anything else fails to compile.
type Transport interface {
	// Rank is this process's rank in [0, WorldSize()).
	Rank() int
	// WorldSize is the number of ranks.
	WorldSize() int
	plumb.Source
}

// tagsPerCall is the collective tags one call may use; calls take turns
// through the tag space by sequence number, so that a message left over
// from an earlier call that failed can never match a later one.
const tagsPerCall = 256

// collTags is the size of the transport's collective tag space.
const collTags = 1 << 24

// Options tunes a Comm. The zero value selects every default.
type Options struct {
	// Root is the rank that collects the contributions of a deadline
	// allreduce and hands out the result (the parameter server of bounded
	// staleness). Default 0.
	Root int
	// GatherMax bounds the scratch, in bytes, that the root of a deadline
	// allreduce receives contributions into at once: one buffer of the
	// data's length per rank it receives from concurrently, at least one.
	// A contribution above the transport's eager limit
	// (engine.Options.EagerMax) moves only once the root posts a receive
	// for it, so the more the root posts at once, the more uploads
	// overlap. The buffers are kept for the next call. Default GatherMax
	// (256 MiB); negative: one rank at a time.
	GatherMax int
	// RingMin is the message size in bytes from which AllReduce uses the
	// bandwidth-optimal ring (reduce-scatter then all-gather) instead of
	// recursive doubling. Default 64 KiB, or PowerOfTwoRingMin (512 KiB)
	// for a world of 4, 8 or 16 ranks (see defaultRingMin). With 2 ranks
	// the ring saves only half the reduction for an extra round trip, so
	// it starts at max(RingMin, 2*Chunk). Left unset in a world that spans
	// hosts of several ranks, Rabenseifner's allreduce takes the sizes
	// from HalvingMin up instead (see there); set, the ring starts here
	// there too. Every rank must set the same.
	RingMin int
	// Chunk is the size in bytes of the pieces large messages are sent
	// in: each piece is reduced as soon as it arrives, while the next one
	// is on the wire, and at most one more is in flight, so that socket
	// buffers never fill. Default, by
	// pair: NeighbourChunk (512 KiB) between neighbours (ranks on one
	// host that share memory), else LoopbackChunk (256 KiB) when every
	// rank is on this machine, else LinkChunk (64 KiB), as measured (see
	// defaultChunk). Set, it is used between every pair.
	Chunk int
	// HalvingMin is the smallest allreduce, in bytes, that AlgorithmAuto
	// gives Rabenseifner's algorithm in a world of 4 ranks or more that
	// spans machines: below RingMin, and above it too where some host
	// holds several ranks and RingMin is left unset (the link between
	// hosts then carries less than the ring's; hosts.go). Default
	// HalvingMin (32 KiB); negative: never. Every rank must set the same.
	HalvingMin int
	// BcastScatterMin is the smallest Broadcast, in bytes, that scatters
	// and chains rather than running a binomial tree, in worlds of 3
	// ranks or more. Default BcastScatterMin (256 KiB); negative: never.
	// Every rank must set the same.
	BcastScatterMin int
	// Algorithm selects AllReduce's algorithm; every rank must select the
	// same. Default AlgorithmAuto: recursive doubling below RingMin, the
	// ring from it on, Rabenseifner's from HalvingMin across machines (see
	// there), AlgorithmStar on a star of more than two ranks;
	// Auto never picks AlgorithmOneSided, which measured
	// slower at every size (see there). AlgorithmOneSided needs a
	// transport that implements SymmetricTransport, or the call fails with
	// ErrNoSymmetricHeap.
	Algorithm Algorithm
}

// Comm runs collectives over a transport. Every rank must call the same
// collectives in the same order. A Comm's methods may be called from one
// goroutine at a time; calls are serialized. Several Comms over one
// transport (with other Options, or train's beside the caller's) share
// one sequence of calls: every rank must make the same calls in the same
// order whichever Comm makes them, and calls on different Comms of a rank
// take turns.
type Comm struct {
	t     Transport
	wire  plumb.Wire         // the tag range t lends the Comm
	sym   SymmetricTransport // t, if it has a symmetric heap; else nil
	owner plumb.Owner        // the owner of wire's tags
	calls *calls             // owner, if it is a calls (always, but in tests)
	opts  Options
	mu    sync.Mutex // serializes calls
	seq   uint32     // the call in progress's number (calls.next), or the last
	buf   []byte     // receive scratch, grown once to the largest need
	meta  uint32     // the call in progress's meta (see callMeta)
	kind  collKind   // the call in progress
	base  uint32     // its first tag
	sent  bool       // it has handed the transport a message (see partial)
	even  bool       // it failed where every rank fails alike: not abandoned, not partial (see end)

	chunks      []int                  // the piece size with each rank (Options.Chunk, by pair)
	links       bool                   // some rank is on another machine (not engine.Topology.Loopback)
	pipe        pipeState              // the pipelined step in progress
	reduceChunk func(off, n int) error // c.pipeChunk, made once

	labelCtx [algorithms][len(sizeClasses)]context.Context // profile labels, made once
	labelled labelCache                                    // labels merged over a caller's (labels.go)
	dl       deadlineState                                 // the deadline allreduce's results on their way (root)
	gather   gatherState                                   // the deadline allreduce's receives posted ahead (root)
	dlHdr    [deadlineHeaderSize]byte                      // a deadline allreduce's header, sent or received
	os       oneSidedState                                 // the one-sided allreduce's heap area
	center   int                                           // a star transport's coordinator, or -1
	order    []int                                         // the rank at each position of the steps (hosts.go); nil: rank order
	at       []int                                         // the position of each rank; nil: its rank
	shared   bool                                          // the world spans hosts, some with several ranks (hosts.go)
	ringSet  bool                                          // Options.RingMin was set
	sends    []plumb.Handle                                // a star worker's pieces in flight (coll_star.go), a Scatter root's sends (coll_rooted.go)
	recvs    []plumb.Handle                                // a Gather root's posted receives (coll_rooted.go)
	site     mailSite                                      // a mailbox exchange's (mail.go)
	boxes    []*shm.Mailbox                                // by rank: the mailbox of a neighbour's pair, or nil
}

// Default piece sizes (Options.Chunk), by link.
const (
	// NeighbourChunk is the default between neighbours, whose frames go
	// through shared memory: a piece costs a frame's handling and a
	// wake-up, and copies at memory speed leave little to overlap
	// (bench/RESULTS.md, "Figures moved out of code comments",
	// NeighbourChunk).
	NeighbourChunk = 512 << 10
	// LoopbackChunk is the default over loopback (every rank local).
	LoopbackChunk = 256 << 10
	// LinkChunk is the default over real links.
	LinkChunk = 64 << 10
)

// HalvingMin is the smallest allreduce, in bytes, that AlgorithmAuto
// gives Rabenseifner's algorithm (AlgorithmHalving) rather than
// recursive doubling, below Options.RingMin, in a world of 4 ranks or
// more that spans machines: there a link's rate bounds a step, and
// doubling sends the whole message log2(n) times; from 32 KiB halving
// was the faster on emulated hosts (bench/RESULTS.md, "Figures moved out
// of code comments", HalvingMin). Over loopback the measured doubling
// thresholds stand.
const HalvingMin = 32 << 10

// GatherMax is Options.GatherMax's default: the root of a deadline
// allreduce receives from up to GatherMax/len(data) ranks at once, so
// that 16 MiB contributions from 16 ranks all move at once.
const GatherMax = 256 << 20

// PowerOfTwoRingMin is Options.RingMin's default for a world of 4, 8 or
// 16 ranks.
const PowerOfTwoRingMin = 512 << 10

// defaultRingMin picks Options.RingMin's default for a world of n ranks.
// Over a power of two, recursive doubling takes log2(n) steps, against the
// ring's 2(n-1), for log2(n)/(2(n-1)/n) times the ring's bytes (4/3 with 4
// ranks): the ring wins only once the bytes outweigh the steps
// (bench/RESULTS.md, "Figures moved out of code comments",
// defaultRingMin). Elsewhere doubling must fold the ranks above the
// power of two in and out, two more full-size steps, and the ring starts
// at 64 KiB.
func defaultRingMin(n int) int {
	if n >= 4 && n&(n-1) == 0 {
		return PowerOfTwoRingMin
	}
	return 64 << 10
}

// defaultChunk picks Options.Chunk's default: LoopbackChunk when every
// rank is local (engine.Topology.Loopback), else LinkChunk, as measured
// (bench/RESULTS.md, "Figures moved out of code comments", defaultChunk).
func defaultChunk(top engine.Topology) int {
	if !top.Loopback {
		return LinkChunk
	}
	return LoopbackChunk
}

// New returns a Comm over t; a nil t fails with ErrUnsupportedTransport.
// A Comm over a transport that already has one shares its sequence of
// calls (see Comm).
func New(t Transport, opts Options) (*Comm, error) {
	wire, ok := plumb.WireOf(t)
	if !ok {
		return nil, fmt.Errorf("collective: New over a %T: %w", t, ErrUnsupportedTransport)
	}
	return newComm(t, wire, opts), nil
}

// sizeOption is a size threshold option's value: def for 0, never
// reached (math.MaxInt) for a negative one.
func sizeOption(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return math.MaxInt
	}
	return v
}

// newComm returns a Comm over t, whose lent tag range is wire.
func newComm(t Transport, wire plumb.Wire, opts Options) *Comm {
	opts.RingMin = max(opts.RingMin, 0) // 0: defaultRingMin, by world size
	opts.HalvingMin = sizeOption(opts.HalvingMin, HalvingMin)
	if opts.GatherMax == 0 {
		opts.GatherMax = GatherMax
	}
	opts.BcastScatterMin = sizeOption(opts.BcastScatterMin, BcastScatterMin)
	top := topologyOf(t)
	fixed := opts.Chunk > 0
	if !fixed {
		opts.Chunk = defaultChunk(top)
	}
	c := &Comm{t: t, wire: wire, opts: opts, center: top.Center, links: !top.Loopback, ringSet: opts.RingMin > 0}
	if len(top.Hosts) > 0 {
		c.order, c.at = hostOrder(top.Hosts, t.WorldSize())
		c.shared = sharedHosts(top.Hosts)
	}
	c.sym, _ = t.(SymmetricTransport)
	c.reduceChunk = c.pipeChunk
	if wire == nil {
		return c // only its algorithm choice is asked of (tests)
	}
	c.chunks = make([]int, t.WorldSize())
	c.boxes = make([]*shm.Mailbox, t.WorldSize())
	for r := range c.chunks {
		c.chunks[r] = opts.Chunk
		c.boxes[r] = wire.Mailbox(r) // fixed once the transport is made
		if !fixed && c.boxes[r] != nil {
			c.chunks[r] = NeighbourChunk
		}
	}
	c.owner, c.calls = lend(wire, t.WorldSize())
	return c
}

// Rank is this process's rank in the Comm's world: its transport's.
func (c *Comm) Rank() int { return c.t.Rank() }

// WorldSize is the number of ranks: its transport's.
func (c *Comm) WorldSize() int { return c.t.WorldSize() }

// Close releases the Comm; it holds no goroutine or connection of its own,
// so this only waits for a call in progress. The transport stays open, and
// so does the one-sided allreduce's area in its symmetric heap (see
// FreeHeap).
func (c *Comm) Close() {
	c.mu.Lock()
	c.buf = nil
	c.mu.Unlock()
}

// chunkWith returns the size of the pieces exchanged with rank peer, in
// whole elements of esz bytes: both ends of a pair pick the same.
func (c *Comm) chunkWith(peer, esz int) int {
	return max(c.pairChunk(peer)/esz*esz, esz)
}

// pairChunk returns the piece size in bytes with rank peer.
func (c *Comm) pairChunk(peer int) int {
	if peer < len(c.chunks) {
		return c.chunks[peer]
	}
	return c.opts.Chunk
}

// begin starts a call of kind k over dt with op (0 for none): the lock,
// the call's meta, and its first tag.
func (c *Comm) begin(k collKind, dt DType, op Op) uint32 {
	c.mu.Lock()
	c.meta = callMeta(k, dt, op)
	if c.calls != nil {
		c.seq = c.calls.next() // shared by every Comm over the transport
	} else if c.seq++; c.seq == 0 { // 0 is no call (calls.go): 2^32-1 is followed by 1
		c.seq = 1
	}
	base := ((c.seq - 1) % callSlots) * tagsPerCall
	c.kind, c.base, c.sent, c.even = k, base, false, false
	if c.calls != nil {
		c.calls.begin(c.seq)
	}
	return base
}

// end finishes the call begin started, whose outcome is *err: a call that
// succeeded is reported complete to the transport, and one that failed of
// anything but a lost peer (the ranks' calls differ, a length, its ctx)
// is abandoned, so that the ranks waiting for this rank's part of it fail
// too instead of waiting until their own ctx ends (see calls.go). In a
// deadline allreduce, where late ranks are the normal case, only the root
// abandons: every other rank waits for its result. A failure after which
// other ranks may have completed the call becomes a *PartialError (see
// partial.go). A failure that every rank finds alike, from an agreement
// they all completed (c.even: the one-sided allreduce's heap too small),
// is neither: no rank waits for this one, and none completes the call,
// and an abandon, which travels apart from the agreement's messages,
// could overtake this rank's last part of it and fail a slower rank with
// ErrCollAbandoned instead of the same error.
func (c *Comm) end(err *error) {
	if *err != nil {
		*err = c.withCause(*err) // an abandon's cause, which the next abandon relays
	}
	switch {
	case c.calls == nil:
	case *err == nil:
		c.calls.end(c.seq)
	case c.even:
	case errors.Is(*err, engine.ErrPeerLost):
		// every rank's collective receives fail of the loss themselves
	case c.kind != kindAllReduceDeadline || c.t.Rank() == c.opts.Root:
		c.calls.abandon(c.base+abandonStep, c.abandonWhy(*err))
	}
	if *err != nil && !c.even {
		*err = c.partial(*err)
	}
	if c.calls != nil {
		c.calls.release()
	}
	c.mu.Unlock()
}

// refuse ends a call of kind k whose arguments this rank refused (err)
// before beginning it. The call still takes its number, so that this
// rank's later calls keep matching the other ranks', and it is abandoned
// as end abandons a failed call (in a deadline allreduce, by the root
// only, which leaves a missing rank out), so that the ranks that began it
// fail with ErrAbandoned instead of waiting for this one. It returns err.
func (c *Comm) refuse(k collKind, err error) error {
	c.begin(k, 0, 0)
	c.end(&err)
	return err
}

// abandonStep is the tag, from a call's first, of its abandon: one that no
// algorithm uses.
const abandonStep = tagsPerCall - 1

// The Comm's calls are tracked (calls.go): the messages of ended calls
// are dropped, a receive gives up when a peer closed in order without
// completing the call or gave it up.

// scratch returns a receive buffer of n bytes.
func (c *Comm) scratch(n int) []byte {
	if cap(c.buf) < n {
		c.buf = alignedBytes(n)
	}
	return c.buf[:n]
}

// alignedBytes returns at least n bytes, 8-byte aligned, so that any
// element type can be viewed in them.
func alignedBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)
}
