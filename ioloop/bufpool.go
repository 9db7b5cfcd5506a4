package ioloop

import (
	"math/bits"
	"sync"

	"github.com/valyala/bytebufferpool"
)

// Buffer is a pooled payload buffer: B holds the bytes. Its ownership
// contract, for every API that hands one over (Handler.Deliver,
// GetBuffer, Conn.PostBuffer):
//
//   - A Buffer has exactly one owner at a time. Whoever holds it may read
//     and write B, and either passes it on or returns it with PutBuffer,
//     once; after that it must not touch B, nor any slice of it.
//   - Deliver hands its Buffer to the handler: the loop keeps no reference
//     to it. GetBuffer makes the caller its owner. PostBuffer takes it
//     over: the connection returns it to the pool once written (or once
//     the connection fails), after calling done.
//   - A Buffer that is never returned is not a leak, only a missed reuse:
//     the garbage collector frees it. A slice of B may thus be handed to
//     a user as a message of its own, the Buffer given up.
//   - B's length is the payload's; its capacity is a power of two (the
//     size class), which the pool relies on: do not grow or reslice B
//     beyond its length before PutBuffer.
type Buffer bytebufferpool.ByteBuffer

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
	bufs []*Buffer
}

func (s *stash) get() *Buffer {
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
func (s *stash) put(bb *Buffer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bufs) >= 1024 || (len(s.bufs)+1)*cap(bb.B) > stashBytes {
		return false
	}
	s.bufs = append(s.bufs, bb)
	return true
}

// GetBuffer returns a pooled buffer whose B has length n, which the
// caller then owns (see Buffer). Return it with PutBuffer once its bytes
// are no longer needed.
func GetBuffer(n int) *Buffer {
	k := ceilClass(n)
	if k >= poolClasses {
		return &Buffer{B: make([]byte, n)}
	}
	bb := stashes[k].get()
	if bb == nil {
		bb = (*Buffer)(pools[k].Get())
	}
	if cap(bb.B) < max(n, 1) { // an empty payload's too: PutBuffer keeps only buffers with room
		bb.B = make([]byte, n, 1<<k)
	}
	bb.B = bb.B[:n]
	return bb
}

// PutBuffer returns bb to the pool of the largest class its capacity
// serves. bb, and every slice of its B, must not be used afterwards.
func PutBuffer(bb *Buffer) {
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
		pools[k].Put((*bytebufferpool.ByteBuffer)(bb))
	}
}

// ceilClass returns the smallest k with 1<<k >= n.
func ceilClass(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}
