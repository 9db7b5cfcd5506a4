package collective

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// The deadline allreduce never waits for a rank that is late, stopped or
// lost: sends that do not wait (plumb.SendStart, SendPost) and receives
// that give up only when their own peer is lost (take, with no All).
//
// The deadline allreduce, per round (call):
//
//	leaf: start(contribution, tag) -> take(root, tag+1: header)
//	      -> Drop the contribution (withdrawn if the root did not take it)
//	      -> header says behind: ErrBehind; else take(root, tag+2)
//	root: gather until the deadline (a lost leaf is left out) -> reduce ->
//	      copy the result into a snapshot -> to each leaf not lost: if its
//	      previous result is still on its way, a header saying behind;
//	      else a header and start(snapshot, tag+2) -> return
//
// So the root never waits for a leaf after the deadline: a result goes
// out from a snapshot that the root keeps until the leaf has taken it,
// at most one per leaf, and a leaf that has not taken its last result by
// the next round is told it is behind rather than sent another. The
// header is 16 bytes: the contributors' mask, then flags.

// deadlineHeaderSize is the size of the root's per-round header.
const deadlineHeaderSize = 16

// flagBehind in a header's flags: the leaf was behind; no result follows.
const flagBehind = 1

// deadlineState is the root's results still on their way to leaves.
type deadlineState struct {
	wire    plumb.Wire
	pending []plumb.Handle // by leaf: its last result's send
	snapOf  []int          // by leaf: the snapshot pending[leaf] reads, or -1
	snaps   [][]byte       // result snapshots
	refs    []int          // by snapshot: pending sends reading it
}

// reap forgets the sends that are over and frees their snapshots.
func (d *deadlineState) reap() {
	for p, s := range d.pending {
		if d.snapOf[p] < 0 {
			continue
		}
		if _, _, err := d.wire.Wait(p, s, plumb.Waiting{How: plumb.Poll}); err != plumb.ErrPending {
			d.refs[d.snapOf[p]]--
			d.pending[p], d.snapOf[p] = plumb.Handle{}, -1
		}
	}
}

// behind reports whether leaf p has not taken its last result yet.
func (d *deadlineState) behind(p int) bool { return d.snapOf[p] >= 0 }

// snapshot returns a free snapshot of n bytes and its index.
func (d *deadlineState) snapshot(n int) (int, []byte) {
	for i, r := range d.refs {
		if r == 0 {
			if cap(d.snaps[i]) < n {
				d.snaps[i] = make([]byte, n)
			}
			return i, d.snaps[i][:n]
		}
	}
	d.snaps = append(d.snaps, make([]byte, n))
	d.refs = append(d.refs, 0)
	return len(d.snaps) - 1, d.snaps[len(d.snaps)-1]
}

func (d *deadlineState) size(n int) {
	if len(d.pending) < n {
		d.pending = make([]plumb.Handle, n)
		d.snapOf = make([]int, n)
		for p := range d.snapOf {
			d.snapOf[p] = -1
		}
	}
}

// deadlineLeaf sends this rank's contribution and waits for the result.
func (c *Comm) deadlineLeaf(ctx context.Context, tag uint32, data []byte, root int) (Contributors, error) {
	s, err := c.start(ctx, root, tag, data)
	if err != nil {
		return Contributors{}, err
	}
	hdr := c.dlHdr[:]                          // not on the stack: it goes through an interface
	m, err := c.take(ctx, root, tag+1, hdr, 0) // only the root's loss ends it
	c.drop(root, s)                            // the root took it, or never will
	if err == nil {
		err = c.recvCheck(m, len(hdr), root)
	}
	if err != nil {
		return Contributors{}, explain(wireErr(err))
	}
	if binary.LittleEndian.Uint64(hdr[8:])&flagBehind != 0 {
		return Contributors{}, ErrBehind
	}
	mask := binary.LittleEndian.Uint64(hdr[:8])
	if n := c.t.WorldSize(); mask&(1<<root) == 0 || n < 64 && mask>>n != 0 {
		return Contributors{}, fmt.Errorf("collective: root %d's contributor set %#x does not fit a world of %d with it: %w", root, mask, n, ErrMismatch)
	}
	m, err = c.take(ctx, root, tag+2, data, 0)
	if err == nil {
		err = c.recvCheck(m, len(data), root)
	}
	return Contributors{Mask: mask, Count: bits.OnesCount64(mask)}, explain(wireErr(err))
}

// deadlineGrace is how long after deadline the root still waits for the
// bytes of a contribution announced in time: the deadline's own span from
// now, at least 50 ms.
func deadlineGrace(deadline time.Time) time.Duration {
	return max(time.Until(deadline), 50*time.Millisecond)
}

// deadlineScatter hands out the round's result without waiting: see the
// protocol above.
func (c *Comm) deadlineScatter(ctx context.Context, tag uint32, data []byte, got Contributors) error {
	r, n := c.t.Rank(), c.t.WorldSize()
	d := &c.dl
	d.wire = c.wire
	d.size(n)
	d.reap()
	si, snap := d.snapshot(len(data))
	copy(snap, data)
	hdr := &c.dlHdr // not on the stack: it goes through an interface
	binary.LittleEndian.PutUint64(hdr[:8], got.Mask)
	for p := range n {
		if p == r {
			continue
		}
		behind := d.behind(p)
		flags := uint64(0)
		if behind {
			flags = flagBehind
		}
		binary.LittleEndian.PutUint64(hdr[8:], flags)
		h := hdr
		_, err := c.wire.Send(ctx, p, tag+1, c.meta, h[:], plumb.SendPost)
		if errors.Is(err, engine.ErrNoCredit) { // p holds that many headers: wait for it
			err = c.send(ctx, p, tag+1, h[:])
		}
		if err == nil && !behind {
			var s plumb.Handle
			if s, err = c.start(ctx, p, tag+2, snap); err == nil {
				d.pending[p], d.snapOf[p] = s, si
				d.refs[si]++
			}
		}
		if err != nil && !errors.Is(err, engine.ErrPeerLost) {
			return explain(err)
		}
	}
	return nil
}
