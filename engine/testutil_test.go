package engine_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// pattern is meshtest.Pattern: a payload that names its sender,
// receiver, tag and sequence number, checked by check.
func pattern(from, to, tag, seq, n int) []byte { return meshtest.Pattern(from, to, tag, seq, n) }

// fillPattern is meshtest.FillPattern.
func fillPattern(b []byte, from, to, tag, seq int) { meshtest.FillPattern(b, from, to, tag, seq) }

// check compares got with the expected pattern.
func check(got []byte, from, to, tag, seq, n int) error {
	if len(got) != n {
		return fmt.Errorf("%d->%d tag %d seq %d: got %d bytes, want %d", from, to, tag, seq, len(got), n)
	}
	if want := pattern(from, to, tag, seq, n); !bytes.Equal(got, want) {
		i := 0
		for i < n && got[i] == want[i] {
			i++
		}
		return fmt.Errorf("%d->%d tag %d seq %d: %d bytes differ from byte %d", from, to, tag, seq, n, i)
	}
	return nil
}

// sizeFor returns the size of message seq of a stream: a deterministic mix
// of empty, small, around-the-staging-buffer and large (up to max) sizes.
func sizeFor(from, to, tag, seq, max int) int {
	r := rand.New(rand.NewPCG(uint64(from*7919+to), uint64(tag*104729+seq)))
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return r.IntN(64)
	case 2:
		return 16<<10 - 64 + r.IntN(128)
	case 3:
		return r.IntN(64 << 10)
	case 4:
		return r.IntN(min(max, 1<<20) + 1)
	default:
		return max - r.IntN(max/4+1)
	}
}
