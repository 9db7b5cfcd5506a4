package collective

import (
	"context"
	"sync"
)

// Transport is what the collectives need from a transport: messaging on a
// tag space of its own, apart from users' tags. *engine.NetTransport
// implements it; any transport can.
type Transport interface {
	Rank() int
	WorldSize() int
	// SendColl sends p to rank to under tag, returning once p may be reused.
	SendColl(ctx context.Context, to int, tag uint32, p []byte) error
	// RecvCollInto receives the next message from rank from under tag into
	// dst and returns its length; a longer one is an error.
	RecvCollInto(ctx context.Context, from int, tag uint32, dst []byte) (int, error)
	// TryRecvCollInto is RecvCollInto that takes only a message that has
	// already arrived, and reports ok false when none has.
	TryRecvCollInto(from int, tag uint32, dst []byte) (n int, ok bool, err error)
	// ExchangeColl sends out to rank to and receives from rank from into
	// in, concurrently (so that two ranks exchanging large messages never
	// wait for each other), and returns the received length.
	ExchangeColl(ctx context.Context, to, from int, tag uint32, out, in []byte) (int, error)
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
	// RingMin is the message size in bytes from which AllReduce uses the
	// bandwidth-optimal ring (reduce-scatter then all-gather) instead of
	// recursive doubling. Default 64 KiB.
	RingMin int
}

// Comm runs collectives over a transport. Every rank must call the same
// collectives in the same order. A Comm's methods may be called from one
// goroutine at a time; calls are serialized.
type Comm struct {
	t    Transport
	opts Options
	mu   sync.Mutex // serializes calls
	seq  uint32     // calls so far
	buf  []byte     // receive scratch, grown once to the largest need

	labelCtx [2][len(sizeClasses)]context.Context // profile labels, made once
	stale    []staleContribution                  // late deadline contributions still to drop (root)
}

// New returns a Comm over t.
func New(t Transport, opts Options) *Comm {
	if opts.RingMin <= 0 {
		opts.RingMin = 64 << 10
	}
	return &Comm{t: t, opts: opts}
}

// Close releases the Comm; it holds no goroutine or connection of its own,
// so this only waits for a call in progress. The transport stays open.
func (c *Comm) Close() {
	c.mu.Lock()
	c.buf = nil
	c.mu.Unlock()
}

// exchange sends out to rank to and receives from rank from into in,
// concurrently, and returns the received length.
func (c *Comm) exchange(ctx context.Context, to, from int, tag uint32, out, in []byte) (int, error) {
	return c.t.ExchangeColl(ctx, to, from, tag, out, in)
}

// begin starts a call: the lock, and the call's first tag.
func (c *Comm) begin() uint32 {
	c.mu.Lock()
	base := (c.seq % (collTags / tagsPerCall)) * tagsPerCall
	c.seq++
	return base
}

// scratch returns a receive buffer of n bytes.
func (c *Comm) scratch(n int) []byte {
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	return c.buf[:n]
}
