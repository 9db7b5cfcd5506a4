package ioloop

import (
	"math/bits"

	"github.com/valyala/bytebufferpool"
)

// poolClasses is the number of power-of-two size classes: 1 B to 1 GiB.
const poolClasses = 31

// pools holds one bytebufferpool.Pool per power-of-two size class, so that
// each calibrates to its own sizes and a large payload is served by a
// buffer that was large before, not grown from a small one.
var pools [poolClasses]bytebufferpool.Pool

// GetBuffer returns a pooled buffer whose B has length n. Return it with
// PutBuffer once its bytes are no longer needed.
func GetBuffer(n int) *bytebufferpool.ByteBuffer {
	k := ceilClass(n)
	if k >= poolClasses {
		return &bytebufferpool.ByteBuffer{B: make([]byte, n)}
	}
	bb := pools[k].Get()
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
	pools[k].Put(bb)
}

// ceilClass returns the smallest k with 1<<k >= n.
func ceilClass(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}
