package collective

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
)

// pattern is a payload that names its sender, receiver, tag and sequence
// number and whose bytes depend on all four, so that a misrouted,
// reordered or corrupted message is detected (engine's tests' pattern).
func pattern(from, to, tag, seq, n int) []byte {
	b := make([]byte, n)
	seed := uint64(from)<<48 ^ uint64(to)<<32 ^ uint64(tag)<<16 ^ uint64(seq)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	var block [4096]byte
	for i := 0; i < len(block); i += 8 {
		binary.LittleEndian.PutUint64(block[i:], r.Uint64())
	}
	for off := 0; off < len(b); off += len(block) {
		if k := copy(b[off:], block[:]); k >= 8 {
			binary.LittleEndian.PutUint64(b[off:], seed^uint64(off))
		}
	}
	return b
}

// collPair runs f for ranks 0 and 1 at once and joins their errors.
func collPair(f func(r int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
