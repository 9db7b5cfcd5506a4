package shm

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestCopyStream: copyStream copies exactly what copy does, for lengths
// around ntMin and every alignment of the destination and the source,
// and touches nothing past the copy.
func TestCopyStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 3*ntMin+256)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	dst := make([]byte, len(src)+128)
	for _, n := range []int{0, 1, 63, 64, ntMin - 1, ntMin, ntMin + 1, ntMin + 63, 2*ntMin + 100, 3 * ntMin} {
		for _, off := range []int{0, 1, 7, 16, 31, 63} {
			so := (off * 5) % 64
			for i := range dst {
				dst[i] = 0xEE
			}
			got := copyStream(dst[off:off+n+17], src[so:so+n])
			if got != n {
				t.Fatalf("n=%d off=%d: copied %d", n, off, got)
			}
			if !bytes.Equal(dst[off:off+n], src[so:so+n]) {
				t.Fatalf("n=%d off=%d: bytes differ", n, off)
			}
			for i, b := range dst {
				if (i < off || i >= off+n) && b != 0xEE {
					t.Fatalf("n=%d off=%d: byte %d outside the copy written", n, off, i)
				}
			}
		}
	}
}

// TestStoreChoice: long copies stream only while plain ones are measured
// slower than slowRate; then one in ntProbe is plain and measured, and
// plain copies measured fast again end the streaming.
func TestStoreChoice(t *testing.T) {
	var c storeChoice
	const n = 512 << 10
	fast, slow := int64(n*1000/40000), int64(n*1000/7000) // 40 and 7 GB/s
	if c.streaming() {
		t.Fatal("a ring with no copy measured streams")
	}
	c.note(n, fast)
	if c.streaming() {
		t.Fatal("streams after a fast plain copy")
	}
	for i := 0; !c.slow; i++ {
		if i == 2 {
			t.Fatalf("2 slow copies after a fast one left the rate at %d bytes/µs", c.rate)
		}
		c.note(n, slow)
	}
	plain := 0
	for range 3 * ntProbe {
		if !c.streaming() {
			plain++
		}
	}
	if plain != 3 {
		t.Fatalf("%d plain copies in %d while streaming, want 3", plain, 3*ntProbe)
	}
	for c.slow {
		c.note(n, fast)
	}
	if c.streaming() {
		t.Fatal("streams after plain copies measured fast again")
	}
}
