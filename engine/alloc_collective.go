package engine

import "encoding/binary"

// tagAlloc is the reserved tag AllocCollective compares allocations on.
const tagAlloc = TagReservedBase + 0x200

// AllocCollective is Alloc called by every rank together: each rank
// allocates and then checks with every other rank that they got the same
// range, failing loudly (and freeing its allocation) if any did not. Like
// every collective, all ranks must call it in the same order.
func (t *NetTransport) AllocCollective(size, align uint64) (SymmetricBuffer, error) {
	b, err := t.Alloc(size, align)
	var mine [17]byte
	if err == nil {
		mine[0] = 1
		binary.LittleEndian.PutUint64(mine[1:], b.Offset)
		binary.LittleEndian.PutUint64(mine[9:], b.Len)
	}
	for r := range t.world {
		if r != t.rank {
			if serr := t.send(nil, r, tagAlloc, mine[:]); serr != nil {
				err = joinErr(err, serr)
			}
		}
	}
	var theirs [17]byte
	for r := range t.world {
		if r == t.rank {
			continue
		}
		n, _, rerr := t.recv(r, tagAlloc, theirs[:], true, waitOpts{op: "alloc"})
		if rerr != nil {
			err = joinErr(err, rerr)
			continue
		}
		if err == nil && (n != len(theirs) || theirs != mine) {
			other := SymmetricBuffer{Rank: r, Offset: binary.LittleEndian.Uint64(theirs[1:]), Len: binary.LittleEndian.Uint64(theirs[9:])}
			err = &AllocMismatchError{Rank: r, Local: b, Remote: other}
		}
	}
	if err != nil && mine[0] == 1 {
		t.Free(b)
		return SymmetricBuffer{}, err
	}
	return b, err
}
