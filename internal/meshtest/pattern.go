package meshtest

import (
	"encoding/binary"
	"math/rand/v2"
)

// Pattern is a payload of n bytes that names its sender, receiver, tag
// and sequence number and whose bytes depend on all four, so that a
// misrouted, reordered or corrupted message is detected.
func Pattern(from, to, tag, seq, n int) []byte {
	b := make([]byte, n)
	FillPattern(b, from, to, tag, seq)
	return b
}

// FillPattern fills b as Pattern makes a payload of len(b) bytes.
func FillPattern(b []byte, from, to, tag, seq int) {
	seed := uint64(from)<<48 ^ uint64(to)<<32 ^ uint64(tag)<<16 ^ uint64(seq)
	r := rand.New(rand.NewPCG(seed, uint64(len(b))))
	var block [4096]byte
	for i := 0; i < len(block); i += 8 {
		binary.LittleEndian.PutUint64(block[i:], r.Uint64())
	}
	// Tile the random block; stamp each block with its index so that a
	// misplaced block is caught too.
	for off := 0; off < len(b); off += len(block) {
		if n := copy(b[off:], block[:]); n >= 8 {
			binary.LittleEndian.PutUint64(b[off:], seed^uint64(off))
		}
	}
}
