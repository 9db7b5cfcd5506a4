package bench

import (
	"bytes"
	"fmt"
)

func checkErr(rank int, format string, args ...any) error {
	return &CheckError{Rank: rank, Msg: fmt.Sprintf(format, args...)}
}

// patternByte is byte j of the payload pattern for messages of size bytes.
func patternByte(size, j int) byte {
	return byte((uint32(j)*2654435761 + uint32(size)*40503 + 0x9e37) >> 24)
}

// pattern returns the payload pattern of a size-byte message.
func pattern(size int) []byte {
	p := make([]byte, size)
	for j := range p {
		p[j] = patternByte(size, j)
	}
	return p
}

// marks are the positions stamped in every message: first, middle, last.
func marks(size int) [3]int { return [3]int{0, size / 2, size - 1} }

// markByte is what message i carries at mark k: the pattern xor a stamp
// that changes with i, so that a stale or reordered message is caught.
func markByte(size, pos, i, k int) byte {
	return patternByte(size, pos) ^ byte(i*37+11+k*85)
}

// stamp writes message i's marks into buf.
func stamp(buf []byte, i int) {
	if len(buf) == 0 {
		return
	}
	for k, pos := range marks(len(buf)) {
		buf[pos] = markByte(len(buf), pos, i, k)
	}
}

// checkMarks verifies the length and the marks of message i.
func checkMarks(rank int, got []byte, n, size, i int) error {
	if n != size {
		return checkErr(rank, "message %d: %d bytes, want %d", i, n, size)
	}
	if size == 0 {
		return nil
	}
	for k, pos := range marks(size) {
		if w := markByte(size, pos, i, k); got[pos] != w {
			return checkErr(rank, "message %d of %d bytes: byte %d is %#x, want %#x", i, size, pos, got[pos], w)
		}
	}
	return nil
}

// checkWhole verifies message i completely: its marks and the pattern
// everywhere else.
func checkWhole(rank int, got []byte, size, i int) error {
	if err := checkMarks(rank, got, len(got), size, i); err != nil {
		return err
	}
	want := pattern(size)
	stamp(want, i)
	if j := firstDiff(got, want); j >= 0 {
		return checkErr(rank, "message %d of %d bytes: first difference at byte %d: %#x, want %#x", i, size, j, got[j], want[j])
	}
	return nil
}

// firstDiff returns the first index where a and b (same length) differ,
// or -1.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for j := range a {
		if a[j] != b[j] {
			return j
		}
	}
	return -1
}
