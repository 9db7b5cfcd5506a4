package collective

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/boltmesh/boltmesh/engine"
)

// SymmetricTransport is what the one-sided allreduce (AlgorithmOneSided)
// needs from a transport besides Transport: one-sided access to the ranks'
// symmetric heaps (engine.SymmetricTransport; the allreduce uses gets and
// barriers), and allocation in this rank's heap. New type-asserts a
// Comm's transport to it; *engine.NetTransport implements it.
type SymmetricTransport interface {
	engine.SymmetricTransport
	// Alloc allocates size bytes aligned to align in this rank's heap;
	// ranks that make the same sequence of Alloc and Free calls get the
	// same offsets.
	Alloc(size, align uint64) (engine.SymmetricBuffer, error)
	// Free releases a buffer from Alloc.
	Free(b engine.SymmetricBuffer) error
	// Bytes returns this rank's view of b, valid until b is freed.
	Bytes(b engine.SymmetricBuffer) ([]byte, error)
	// BarrierContext is Barrier (a Quiet on every rank, then a barrier)
	// that gives up when ctx ends.
	BarrierContext(ctx context.Context) error
}

var _ SymmetricTransport = (*engine.NetTransport)(nil)

// Algorithm selects how AllReduce combines the ranks' data (see
// Options.Algorithm). Every rank must select the same one.
type Algorithm uint8

const (
	// AlgorithmAuto picks by world and message size: recursive doubling
	// below Options.RingMin (from Options.HalvingMin, AlgorithmHalving in a world
	// of 4 ranks or more that spans machines), the ring from it on, and
	// AlgorithmStar on a star of more than two ranks. It never picks the
	// one-sided algorithm, which measured slower at every size (see
	// AlgorithmOneSided).
	AlgorithmAuto Algorithm = iota
	// AlgorithmDoubling is recursive doubling at every size: log2 n
	// exchanges of the whole message.
	AlgorithmDoubling
	// AlgorithmRing is the ring reduce-scatter and all-gather at every
	// size (recursive doubling with one rank or more than 128).
	AlgorithmRing
	// AlgorithmOneSided works over the symmetric heap with gets and
	// barriers instead of messages; the transport must implement
	// SymmetricTransport, or the call fails with ErrNoSymmetricHeap. Each
	// rank stages block j of its data in its heap for rank j; after a
	// barrier, rank j gets its block's contributions (in pieces of
	// Options.Chunk, each reduced as soon as it is in) and reduces them in
	// rank order, the same on every call; after a second barrier, every
	// rank gets each reduced block straight into its data. Each block is
	// reduced by one rank only, so every rank ends with the same bits. It
	// uses gets rather than puts, a choice made while engine's Quiet (which
	// a barrier after puts runs) still allocated; with gets a call
	// allocates nothing once the area exists.
	//
	// Every rank needs an area of about the message size plus 64 bytes
	// per rank in its symmetric heap (engine.Options.HeapSize; a
	// *HeapError names the size when it does not fit), and as much
	// scratch memory. The first call that needs a larger area allocates
	// it, agreeing with the other ranks through two small two-sided
	// allreduces; later calls reuse it (FreeHeap returns it). ctx bounds
	// the barriers; a get in flight ends with its data or with its peer's
	// loss (engine.ErrPeerLost). A call that fails with another rank's
	// different length, element type or reduction (ErrMismatch) or with
	// *HeapError fails on every rank at the same step and leaves the Comm
	// usable; any other failure retires the Comm's one-sided path (see
	// ErrOneSidedFailed), so that no later call can mix its heap traffic
	// with the failed one's.
	//
	// Two barriers and two get round trips, each get served by the
	// target's event loop, cost more than doubling's exchanges, and staging
	// the blocks is a copy the ring does not make, so it was slower than
	// AlgorithmAuto at every size measured, and AlgorithmAuto never picks
	// it (bench/RESULTS.md, "Figures moved out of code comments",
	// AlgorithmOneSided).
	AlgorithmOneSided
	// AlgorithmStar reduces at a star's coordinator, then broadcasts from
	// it (see engine.CoordinatorListen): every worker sends its data to the
	// center, which reduces them in rank order and sends the result back;
	// data longer than Options.Chunk goes in pieces, every worker's at
	// once, each piece's result sent back as soon as it is reduced.
	// AlgorithmAuto picks it on a star of more than two ranks, where the
	// others would send every worker-to-worker step through the center.
	AlgorithmStar
	// AlgorithmHalving is Rabenseifner's: a reduce-scatter by recursive
	// halving, then an all-gather by recursive doubling. It moves the
	// ring's 2(n-1)/n of the data per rank in 2 log2(n) steps, for
	// mid-size messages on links whose rate, not their latency, bounds a
	// step.
	AlgorithmHalving
	algorithms
)

// String returns the algorithm's name, as in profile labels.
func (a Algorithm) String() string {
	switch a {
	case AlgorithmAuto:
		return "auto"
	case AlgorithmDoubling:
		return "recursive-doubling"
	case AlgorithmRing:
		return "ring"
	case AlgorithmOneSided:
		return "onesided"
	case AlgorithmStar:
		return "star"
	case AlgorithmHalving:
		return "halving"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm returns the Algorithm whose String is s: "auto",
// "recursive-doubling" (or "doubling"), "ring", "onesided", "star" or
// "halving"; an error wrapping ErrAlgorithm for anything else.
func ParseAlgorithm(s string) (Algorithm, error) {
	if s == "doubling" {
		return AlgorithmDoubling, nil
	}
	for a := range algorithms {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want auto, doubling, ring, halving, onesided or star)", ErrAlgorithm, s)
}

// Layout of a rank's area: n slots of stride bytes, slot p for block p of
// the data. Slot p (p not this rank) holds this rank's header in its first
// osHdrSlot bytes, then its contribution to block p, for rank p to get;
// slot rank's data part receives the reduced block, for the others to get.
const (
	osHdrSlot = 64 // header room at the start of a slot: a cache line
	osHdrLen  = 24 // magic, call number, meta, length
	osAlign   = 64
	osMagic   = 0xB0_1D_05_1D
	// osAgreeTag is the offset from a call's first tag of its second
	// agreement (growth); the first uses offsets from 0, below
	// 2 + log2(ranks).
	osAgreeTag = 128
)

// oneSidedState is a Comm's part of the symmetric heap.
type oneSidedState struct {
	area   engine.SymmetricBuffer // this rank's area; Len 0: none yet
	mem    []byte                 // this rank's view of area
	stride uint64                 // bytes per slot of area
	err    error                  // the failure that retired the one-sided path
	hdr    [osHdrLen]byte         // this call's header
	reqs   []engine.Request       // gets in flight: n-1 per piece
	agree  [3]int64               // growth agreements
}

// osLayout returns the slot stride and the area's size of an allreduce of
// elems elements of esz bytes over n ranks.
func osLayout(n, elems, esz int) (stride, need uint64) {
	maxBlock := uint64((elems + n - 1) / n * esz)
	stride = osHdrSlot + (maxBlock+osAlign-1)&^(osAlign-1)
	return stride, uint64(n) * stride
}

// oneSided is the one-sided allreduce, with Mean's division done. A
// failure that may leave the ranks out of step retires the one-sided path
// (see ErrOneSidedFailed); one that every rank detects at the same step
// with nothing in flight (another rank's call or length differs, the heap
// is too small) leaves it usable.
func (c *Comm) oneSided(ctx context.Context, tag uint32, dt DType, data []byte, op Op) error {
	n := c.t.WorldSize()
	if n == 1 {
		return FinishBytes(dt, data, op, 1)
	}
	s := &c.os
	if s.err != nil {
		return fmt.Errorf("%w: %w", ErrOneSidedFailed, s.err)
	}
	err, clean := c.osAllReduce(ctx, tag, dt, data, op)
	if err != nil && !clean {
		s.err = err
	}
	c.even = err != nil && clean // every rank fails alike: see Comm.end
	return err
}

// osAllReduce runs one call: this rank stages block p of its data in its
// slot p for every other rank p; barrier; the ranks agree on the area's
// size (see below); it gets its own block's n-1 contributions
// (slot rank of every other rank) and reduces them with its own in rank
// order into its slot rank; barrier; it gets every other block p,
// reduced, from rank p's slot p straight into data. Only gets are used:
// the engine's Quiet, which a barrier after puts runs, allocates.
// clean reports an error after which the ranks are still in step (see
// oneSided).
//
// Each slot is read by a remote get between the two barriers of a call
// (contributions) or after the second (results), and written by its owner
// before the first (contributions) or between the two (results), so no
// get reads a slot while it is rewritten: a rank passes the next call's
// first barrier only once every rank has finished this call.
func (c *Comm) osAllReduce(ctx context.Context, tag uint32, dt DType, data []byte, op Op) (err error, clean bool) {
	s := &c.os
	r, n := c.t.Rank(), c.t.WorldSize()
	esz := dt.Size()
	elems := len(data) / esz
	stride, need := osLayout(n, elems, esz)
	grow := s.area.Len == 0 || stride > s.stride
	if !grow {
		c.osStage(data, esz)
	}
	// Every call starts with a barrier (which fails on every rank if one
	// has closed or is lost) and an agreement: on the area's size, so that
	// ranks whose lengths differ all fail here, rather than some growing
	// their area while the others wait for them, and on whether any rank
	// must grow its area.
	if err := c.sym.BarrierContext(ctx); err != nil {
		return err, false
	}
	a := s.agree[:3]
	a[0], a[1], a[2] = int64(need), -int64(need), 0
	if grow {
		a[2] = 1
	}
	if err := c.osAgree(ctx, tag, a); err != nil {
		return err, false
	}
	if a[0] != -a[1] {
		return fmt.Errorf("boltmesh: collective: one-sided allreduce: ranks need heap areas of %d to %d bytes (this rank %d): their lengths differ: %w (%w)",
			-a[1], a[0], need, ErrLengthMismatch, ErrMismatch), true
	}
	if a[2] != 0 {
		if err, clean := c.osGrow(ctx, tag, stride, need); err != nil {
			return err, clean
		}
		c.osStage(data, esz)
		if err := c.sym.BarrierContext(ctx); err != nil {
			return err, false
		}
	}
	base, stride := s.area.Offset, s.stride
	block := func(i int) (lo, hi int) { return i * elems / n * esz, (i + 1) * elems / n * esz }

	// Reduce-scatter: every other rank's slot r, header and contribution,
	// into scratch at the same place, in pieces of Options.Chunk bytes:
	// each piece is reduced as soon as it is in from every rank, while the
	// later ones are still in flight.
	lo, hi := block(r)
	bl := hi - lo
	chunk := max(c.opts.Chunk/esz*esz, esz)
	pieces := max(1, (bl+chunk-1)/chunk)
	in := c.scratch(n * int(stride))
	if cap(s.reqs) < (n-1)*pieces {
		s.reqs = make([]engine.Request, 0, (n-1)*pieces)
	}
	for q := 0; q < pieces && err == nil; q++ {
		from, to := osHdrSlot+q*chunk, osHdrSlot+min(bl, (q+1)*chunk)
		if q == 0 {
			from = 0 // with the header
		}
		for k := 1; k < n && err == nil; k++ {
			i := (r - k + n) % n
			at := int(uint64(i) * stride)
			src := engine.SymmetricBuffer{Rank: i, Offset: base + uint64(r)*stride + uint64(from), Len: uint64(to - from)}
			err = c.osStart(c.sym.GetNB(src, in[at+from:at+to]))
		}
	}
	if err != nil {
		return errors.Join(err, c.osWait(0)), false
	}
	// This rank's block, reduced in rank order into its own slot, where
	// the others get it from; Mean is divided here, once per element.
	off := uint64(r)*stride + osHdrSlot
	acc := s.mem[off : off+uint64(bl)]
	contrib := func(i, a, b int) []byte {
		if i == r {
			return data[lo+a : lo+b]
		}
		at := int(uint64(i)*stride) + osHdrSlot
		return in[at+a : at+b]
	}
	for q := range pieces {
		for j := q * (n - 1); j < (q+1)*(n-1); j++ {
			if e := s.reqs[j].Wait(); e != nil && err == nil {
				err = e
			}
		}
		if err == nil && q == 0 {
			err = c.osCheckHeaders(in, stride)
			if err != nil {
				// Every rank finds a mismatch here; a barrier in place of
				// the second one keeps any from staging its next call
				// before all have read this one.
				if berr := errors.Join(c.osWait((q+1)*(n-1)), c.sym.BarrierContext(ctx)); berr != nil {
					return errors.Join(err, berr), false
				}
				return err, true
			}
		}
		if err != nil {
			return errors.Join(err, c.osWait((q+1)*(n-1))), false
		}
		a, b := q*chunk, min(bl, (q+1)*chunk)
		copy(acc[a:b], contrib(0, a, b))
		for i := 1; i < n && err == nil; i++ {
			err = CombineBytes(dt, acc[a:b], contrib(i, a, b), op)
		}
		if err == nil {
			err = FinishBytes(dt, acc[a:b], op, n)
		}
		if err != nil {
			return errors.Join(err, c.osWait((q+1)*(n-1))), false
		}
	}
	c.osWait(len(s.reqs))
	copy(data[lo:hi], acc)
	if err := c.sym.BarrierContext(ctx); err != nil {
		return err, false
	}

	// All-gather: every other rank's block, straight into data.
	for k := 1; k < n && err == nil; k++ {
		p := (r + k) % n
		if lo, hi := block(p); hi > lo {
			src := engine.SymmetricBuffer{Rank: p, Offset: base + uint64(p)*stride + osHdrSlot, Len: uint64(hi - lo)}
			err = c.osStart(c.sym.GetNB(src, data[lo:hi]))
		}
	}
	if err = errors.Join(err, c.osWait(0)); err != nil {
		return err, false
	}
	return nil, false
}

// osStart records a started get, to be waited for by osWait.
func (c *Comm) osStart(req engine.Request, err error) error {
	if err == nil {
		c.os.reqs = append(c.os.reqs, req)
	}
	return err
}

// osWait waits for the started gets from index from on (those before it
// have been waited for), returns the first error, and forgets them all.
func (c *Comm) osWait(from int) error {
	var first error
	for i := from; i < len(c.os.reqs); i++ {
		if err := c.os.reqs[i].Wait(); err != nil && first == nil {
			first = err
		}
	}
	clear(c.os.reqs)
	c.os.reqs = c.os.reqs[:0]
	return first
}

// osCheckHeaders compares the headers of the other ranks, at the start of
// their slots in buf, with this rank's: a rank whose call, length or call
// number differs makes every rank fail here, at the same step (if one
// rank differs from another, each differs from some rank).
func (c *Comm) osCheckHeaders(buf []byte, stride uint64) error {
	s := &c.os
	r, n := c.t.Rank(), c.t.WorldSize()
	le := binary.LittleEndian
	for i := range n {
		got := buf[uint64(i)*stride : uint64(i)*stride+osHdrLen]
		switch {
		case i == r || bytes.Equal(got, s.hdr[:]):
		case le.Uint32(got[0:]) != osMagic || le.Uint32(got[4:]) != c.seq:
			return fmt.Errorf("boltmesh: collective: one-sided allreduce: rank %d is not at this rank's call %d: %w", i, c.seq, ErrMismatch)
		case le.Uint32(got[8:]) != c.meta:
			return &MismatchError{Rank: i, Want: metaString(c.meta), Got: metaString(le.Uint32(got[8:])), Err: ErrMismatch}
		default:
			return osLengthMismatch{rank: i, got: le.Uint64(got[16:]), want: le.Uint64(s.hdr[16:])}
		}
	}
	return nil
}

// osAgreeMeta is the call meta of the one-sided allreduce's agreements.
var osAgreeMeta = callMeta(kindOneSidedAgree, 0, 0)

// osAgree runs one agreement, an allreduce of Max over a, under
// osAgreeMeta: the same whatever each rank's element type and reduction,
// so that ranks whose calls differ in them still agree here, and all find
// the difference in the headers, at the same step.
func (c *Comm) osAgree(ctx context.Context, tag uint32, a []int64) error {
	m := c.meta
	c.meta = osAgreeMeta
	err := c.doubling(ctx, tag, Int64, AsBytes(a), Max)
	c.meta = m
	return err
}

// osStage writes this call's header and this rank's contribution to every
// other rank's block p into its slot p. The slots stay where the area's
// first call put them, whatever the lengths of later calls: slot rank may
// still be read (a get of the last call's result) while the next call
// stages the others.
func (c *Comm) osStage(data []byte, esz int) {
	s := &c.os
	r, n := c.t.Rank(), c.t.WorldSize()
	elems := len(data) / esz
	h := s.hdr[:]
	binary.LittleEndian.PutUint32(h[0:], osMagic)
	binary.LittleEndian.PutUint32(h[4:], c.seq)
	binary.LittleEndian.PutUint32(h[8:], c.meta)
	binary.LittleEndian.PutUint32(h[12:], 0)
	binary.LittleEndian.PutUint64(h[16:], uint64(len(data)))
	for p := range n {
		if p != r {
			lo, hi := p*elems/n*esz, (p+1)*elems/n*esz
			slot := s.mem[uint64(p)*s.stride:]
			copy(slot, h)
			copy(slot[osHdrSlot:], data[lo:hi])
		}
	}
}

// osGrow replaces the heap area with one of need bytes and slots of
// stride bytes, once the call's first agreement has proved that every rank
// needs the same size and has entered this call, so that none still reads
// the old area (a get of the last call's result) when it is freed. A
// second agreement, after the allocation, proves that every rank got the
// same offset before any rank reads it. Its outcome is the same on every
// rank, so a failure it reports leaves the ranks in step.
func (c *Comm) osGrow(ctx context.Context, tag uint32, stride, need uint64) (err error, clean bool) {
	s := &c.os
	n := c.t.WorldSize()
	a := s.agree[:]
	if s.area.Len > 0 {
		if err := c.sym.Free(s.area); err != nil {
			return err, false
		}
		s.area, s.mem, s.stride = engine.SymmetricBuffer{}, nil, 0
	}
	b, aerr := c.sym.Alloc(need, osAlign)
	var mem []byte
	if aerr == nil {
		if mem, aerr = c.sym.Bytes(b); aerr != nil {
			c.sym.Free(b)
		}
	}
	// A failed rank contributes offsets that leave the maxima alone.
	a[0], a[1], a[2] = 0, int64(b.Offset), -int64(b.Offset)
	if aerr != nil {
		a[0], a[1], a[2] = 1, math.MinInt64, math.MinInt64
	}
	if err := c.osAgree(ctx, tag+osAgreeTag, a[:3]); err != nil {
		if aerr == nil {
			s.area, s.mem, s.stride = b, mem, stride // others may put into it: keep it
		}
		return err, false
	}
	switch {
	case a[0] != 0:
		if aerr == nil {
			c.sym.Free(b)
		}
		return &HeapError{Need: need, Err: aerr}, true
	case a[1] != -a[2]:
		c.sym.Free(b)
		return fmt.Errorf("boltmesh: collective: one-sided allreduce: heap areas at offsets %d to %d: %w", -a[2], a[1], ErrAllocMismatch), true
	}
	s.area, s.mem, s.stride = b, mem, stride
	if s.reqs == nil {
		s.reqs = make([]engine.Request, 0, n-1)
	}
	return nil, false
}

// FreeHeap returns the one-sided allreduce's area to the symmetric
// heap; a later one-sided call allocates a new one. Like the collectives,
// every rank must call it, at the same point of their call sequences: it
// starts with a barrier, since other ranks may still be reading the last
// result from this rank's area. Close does not free the area. After a
// one-sided failure (ErrOneSidedFailed) the area stays allocated, as other
// ranks may still read it, and FreeHeap returns that error.
func (c *Comm) FreeHeap(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.os
	switch {
	case s.err != nil:
		return fmt.Errorf("%w: %w", ErrOneSidedFailed, s.err)
	case s.area.Len == 0:
		return nil
	}
	if err := c.sym.BarrierContext(ctx); err != nil {
		s.err = err
		return err
	}
	err := c.sym.Free(s.area)
	s.area, s.mem, s.stride = engine.SymmetricBuffer{}, nil, 0
	return err
}
