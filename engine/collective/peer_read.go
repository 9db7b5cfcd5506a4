package collective

import (
	"context"
	"encoding/binary"
	"unsafe"
)

// PeerReadMin is the smallest allreduce, in bytes, for which
// AlgorithmAuto takes AlgorithmPeerRead between two neighbours.
const PeerReadMin = 64 << 10

// peerReadChunk is the piece AlgorithmPeerRead reads and reduces at a
// time: small enough that the piece read is still in cache when it is
// reduced.
const peerReadChunk = 64 << 10

// Offsets from a call's first tag of AlgorithmPeerRead's exchanges, past
// those of the ring with two ranks (0 and 1), which a first call whose
// read was refused goes on with.
const (
	prTagAddr    = 2 // the data's address and length
	prTagProbe   = 3 // first call: whether the read of one byte worked
	prTagReduced = 4 // this rank's half is reduced
	prTagDone    = 5 // this rank is done reading the other's data
)

// prAddrMsg is the length of the address message: address, length.
const prAddrMsg = 16

// What a Comm's ranks agreed on AlgorithmPeerRead (peerReadState.agreed).
const (
	prUnknown = iota // not tried yet
	prYes            // both ranks can read the other's memory
	prNo             // one cannot: the other algorithms only
)

// peerReadState is a Comm's part of AlgorithmPeerRead.
type peerReadState struct {
	agreed  uint8
	out, in [prAddrMsg]byte
	probe   [1]byte
}

// usePeerRead reports whether an allreduce of size bytes over n ranks
// takes AlgorithmPeerRead, from min bytes on: two ranks, neighbours, and
// not found unable to read each other's memory. Both ranks answer alike
// for the same size.
func (c *Comm) usePeerRead(n, size, min int) bool {
	return n == 2 && c.peers != nil && c.pr.agreed != prNo && size >= min && size >= 2*8 &&
		c.peers.PeerReadable(1-c.t.Rank())
}

// peerRead is AlgorithmPeerRead: rank 0 reduces the lower half of the
// elements, rank 1 the upper, each reading it out of the other's data in
// pieces of peerReadChunk; then each reads the other's reduced half
// straight into its data. Each element is reduced by one rank only, so
// both end with the same bits.
func (c *Comm) peerRead(ctx context.Context, tag uint32, dt DType, data []byte, op Op) error {
	r := c.t.Rank()
	peer := 1 - r
	st := &c.pr
	binary.LittleEndian.PutUint64(st.out[:], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(data)))))
	binary.LittleEndian.PutUint64(st.out[8:], uint64(len(data)))
	m, err := c.exchange(ctx, peer, peer, tag+prTagAddr, st.out[:], st.in[:])
	if err == nil {
		err = c.recvCheck(m, prAddrMsg, peer)
	}
	if err != nil {
		return err
	}
	addr := uintptr(binary.LittleEndian.Uint64(st.in[:]))
	if got := binary.LittleEndian.Uint64(st.in[8:]); got != uint64(len(data)) {
		return &CallLengthError{Rank: peer, Want: len(data), Got: int(min(got, 1<<62))}
	}
	if st.agreed == prUnknown {
		ok, err := c.peerReadProbe(ctx, peer, tag, addr)
		if err != nil {
			return err
		}
		if !ok { // what AlgorithmAuto takes from now on
			if c.autoAlgo(2, len(data)) == AlgorithmRing {
				return c.ring(ctx, tag, dt, data, op)
			}
			return c.doubling(ctx, tag, dt, data, op)
		}
	}
	esz := dt.Size()
	half := len(data) / esz / 2 * esz
	mine, theirs := [2]int{0, half}, [2]int{half, len(data)}
	if r == 1 {
		mine, theirs = theirs, mine
	}
	buf := c.scratch(min(peerReadChunk/esz*esz, mine[1]-mine[0]))
	for off := mine[0]; off < mine[1]; off += len(buf) {
		k := min(len(buf), mine[1]-off)
		if err := c.peers.ReadPeer(peer, addr+uintptr(off), buf[:k]); err != nil {
			return err
		}
		if err := ReduceBytes(dt, data[off:off+k], buf[:k], op); err != nil {
			return err
		}
	}
	if _, err := c.exchange(ctx, peer, peer, tag+prTagReduced, nil, nil); err != nil {
		return err
	}
	if err := c.peers.ReadPeer(peer, addr+uintptr(theirs[0]), data[theirs[0]:theirs[1]]); err != nil {
		return err
	}
	// Not bounded by ctx: once this rank said it is done reading, it may
	// return only when the other is done reading its data, a copy away
	// (or lost).
	_, err = c.exchange(context.Background(), peer, peer, tag+prTagDone, nil, nil)
	return err
}

// peerReadProbe finds, in a Comm's first call that could use
// AlgorithmPeerRead, whether both ranks can read the other's memory: each
// reads one byte at the other's address and tells the other whether it
// could.
func (c *Comm) peerReadProbe(ctx context.Context, peer int, tag uint32, addr uintptr) (bool, error) {
	st := &c.pr
	var out [1]byte
	if c.peers.ReadPeer(peer, addr, st.probe[:]) == nil {
		out[0] = 1
	}
	var in [1]byte
	m, err := c.exchange(ctx, peer, peer, tag+prTagProbe, out[:], in[:])
	if err == nil {
		err = c.recvCheck(m, 1, peer)
	}
	if err != nil {
		return false, err
	}
	st.agreed = prNo
	if out[0] == 1 && in[0] == 1 {
		st.agreed = prYes
	}
	return st.agreed == prYes, nil
}
