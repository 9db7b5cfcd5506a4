package ioloop

import (
	"math/bits"
	"sync"

	"github.com/valyala/bytebufferpool"
)

// poolClasses is the number of power-of-two size classes: 1 B to 1 GiB.
const poolClasses = 31

// pools holds one bytebufferpool.Pool per power-of-two size class, so that
// each calibrates to its own sizes and a large payload is served by a
// buffer that was large before, not grown from a small one.
var pools [poolClasses]bytebufferpool.Pool

// stashes keep a few buffers of each class outside the pools: a
// bytebufferpool.Pool is a sync.Pool, which every GC cycle empties, and a
// stream of large unexpected messages would otherwise allocate a fresh
// buffer for most of them (and so cause the GC cycles that empty the pool).
var stashes [poolClasses]stash

// stashBytes bounds what one class's stash holds.
const stashBytes = 64 << 20

type stash struct {
	mu   sync.Mutex
	bufs []*bytebufferpool.ByteBuffer
}

func (s *stash) get() *bytebufferpool.ByteBuffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.bufs)
	if n == 0 {
		return nil
	}
	bb := s.bufs[n-1]
	s.bufs[n-1] = nil
	s.bufs = s.bufs[:n-1]
	return bb
}

// put keeps bb if there is room: at most 1024 buffers and stashBytes.
func (s *stash) put(bb *bytebufferpool.ByteBuffer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bufs) >= 1024 || (len(s.bufs)+1)*cap(bb.B) > stashBytes {
		return false
	}
	s.bufs = append(s.bufs, bb)
	return true
}

// GetBuffer returns a pooled buffer whose B has length n. Return it with
// PutBuffer once its bytes are no longer needed.
func GetBuffer(n int) *bytebufferpool.ByteBuffer {
	k := ceilClass(n)
	if k >= poolClasses {
		return &bytebufferpool.ByteBuffer{B: make([]byte, n)}
	}
	bb := stashes[k].get()
	if bb == nil {
		bb = pools[k].Get()
	}
	if cap(bb.B) < n {
		bb.B = make([]byte, n, 1<<k)
	}
	bb.B = bb.B[:n]
	return bb
}

// PutBuffer returns bb to the pool of the largest class its capacity
// serves. bb must not be used afterwards.
func PutBuffer(bb *bytebufferpool.ByteBuffer) {
	c := cap(bb.B)
	if c == 0 {
		return
	}
	k := bits.Len(uint(c)) - 1 // 1<<k <= c
	if k >= poolClasses {
		return
	}
	bb.B = bb.B[:1<<k]
	if !stashes[k].put(bb) {
		pools[k].Put(bb)
	}
}

// ceilClass returns the smallest k with 1<<k >= n.
func ceilClass(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}
