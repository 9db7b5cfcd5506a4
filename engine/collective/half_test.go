package collective

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

// Reference rounding, independent of the conversion code: the table of
// every non-negative finite 16-bit value in order (the index is the bit
// pattern), plus one virtual value standing for +Inf (2^16 for binary16,
// 2^128 for bfloat16: the next value an unbounded exponent would give).
// nearest picks the closest entry, ties to the even bit pattern, which is
// exactly IEEE round-to-nearest-even with overflow to Inf.

var (
	tablesOnce      sync.Once
	f16Tab, bf16Tab []float64
)

func tables() {
	tablesOnce.Do(func() {
		for h := 0; h <= 0x7bff; h++ {
			e, m := h>>10, h&0x3ff
			if e == 0 {
				f16Tab = append(f16Tab, math.Ldexp(float64(m), -24))
			} else {
				f16Tab = append(f16Tab, math.Ldexp(float64(1024+m), e-25))
			}
		}
		f16Tab = append(f16Tab, 65536) // index 0x7c00: +Inf
		for h := 0; h <= 0x7f7f; h++ {
			e, m := h>>7, h&0x7f
			if e == 0 {
				bf16Tab = append(bf16Tab, math.Ldexp(float64(m), -133))
			} else {
				bf16Tab = append(bf16Tab, math.Ldexp(float64(128+m), e-134))
			}
		}
		bf16Tab = append(bf16Tab, math.Ldexp(1, 128)) // index 0x7f80: +Inf
	})
}

func nearest(tab []float64, x float64) uint16 {
	if math.IsNaN(x) {
		return 0x7e00
	}
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	last := len(tab) - 1
	if x >= tab[last] {
		return sign | uint16(last)
	}
	i := sort.SearchFloat64s(tab, x) // first entry >= x
	if tab[i] == x {
		return sign | uint16(i)
	}
	lo, hi := tab[i-1], tab[i]
	switch {
	case x-lo < hi-x:
		i--
	case x-lo == hi-x && (i-1)%2 == 0:
		i--
	}
	return sign | uint16(i)
}

func nearestF16(x float64) uint16  { tables(); return nearest(f16Tab, x) }
func nearestBF16(x float64) uint16 { tables(); return nearest(bf16Tab, x) }

func isNaN16(dt DType, h uint16) bool {
	if dt == Float16 {
		return h&0x7fff > 0x7c00
	}
	return h&0x7fff > 0x7f80
}

// TestHalfExhaustive converts all 65536 bit patterns of both formats: the
// widening gives the exact value (checked against the table), NaN stays
// NaN, and narrowing back gives the same bits, NaNs included.
func TestHalfExhaustive(t *testing.T) {
	tables()
	for _, h := range halves() {
		tab := f16Tab
		if h.dt == BFloat16 {
			tab = bf16Tab
		}
		inf := uint16(len(tab) - 1)
		for i := 0; i < 1<<16; i++ {
			b := uint16(i)
			f := h.toF32(b)
			mag := b & 0x7fff
			switch {
			case mag > inf:
				if !math.IsNaN(float64(f)) || !isNaN16(h.dt, b) {
					t.Errorf("%v %#04x: %v, want NaN", h.dt, b, f)
				}
			case mag == inf:
				if !math.IsInf(float64(f), 0) || math.Signbit(float64(f)) != (b&0x8000 != 0) {
					t.Errorf("%v %#04x: %v, want Inf", h.dt, b, f)
				}
			default:
				want := tab[mag]
				if b&0x8000 != 0 {
					want = -want
				}
				if float64(f) != want || math.Signbit(float64(f)) != (b&0x8000 != 0) {
					t.Errorf("%v %#04x: %v, want %v", h.dt, b, f, want)
				}
			}
			if back := h.fromF(f); back != b {
				t.Errorf("%v %#04x: round trip gives %#04x", h.dt, b, back)
			}
		}
	}
}

// TestHalfRounding compares the narrowing conversions with the reference
// on every midpoint between neighbouring 16-bit values, its float32
// neighbours, and random float32 bit patterns.
func TestHalfRounding(t *testing.T) {
	tables()
	r := rand.New(rand.NewPCG(13, 14))
	for _, h := range halves() {
		tab := f16Tab
		if h.dt == BFloat16 {
			tab = bf16Tab
		}
		check := func(f float32) {
			if math.IsNaN(float64(f)) {
				if !isNaN16(h.dt, h.fromF(f)) {
					t.Errorf("%v: NaN %#08x -> %#04x", h.dt, math.Float32bits(f), h.fromF(f))
				}
				return
			}
			if got, want := h.fromF(f), h.refNearest(float64(f)); got != want {
				t.Errorf("%v: %g (%#08x) -> %#04x, want %#04x", h.dt, f, math.Float32bits(f), got, want)
			}
		}
		for i := 0; i+1 < len(tab); i++ {
			mid := float32((tab[i] + tab[i+1]) / 2) // exact: needs p+1 bits
			if float64(mid) != (tab[i]+tab[i+1])/2 {
				t.Fatalf("midpoint not exact in float32")
			}
			for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
				check(f)
				check(-f)
			}
		}
		for range 1 << 18 {
			check(math.Float32frombits(r.Uint32()))
		}
		for _, f := range []float32{0, float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32,
			math.SmallestNonzeroFloat32, float32(math.Inf(1)), float32(math.Inf(-1))} {
			check(f)
		}
	}
}

func TestHalfCases(t *testing.T) {
	f := math.Float32frombits
	cases := []struct {
		in      float32
		f16, bf uint16
	}{
		{1, 0x3c00, 0x3f80},
		{-2, 0xc000, 0xc000},
		{0, 0, 0},
		{float32(math.Copysign(0, -1)), 0x8000, 0x8000},
		{float32(math.Inf(1)), 0x7c00, 0x7f80},
		{float32(math.Inf(-1)), 0xfc00, 0xff80},
		// binary16 ties to even: 1+2^-11 is halfway between 1 and 1+2^-10.
		{1 + 0x1p-11, 0x3c00, 0x3f80},
		{1 + 3*0x1p-11, 0x3c02, 0x3f80},
		{1 + 0x1p-11 + 0x1p-20, 0x3c01, 0x3f80},
		// bfloat16 ties to even: 1+2^-8 between 1 and 1+2^-7.
		{1 + 0x1p-8, 0x3c04, 0x3f80},
		{1 + 3*0x1p-8, 0x3c0c, 0x3f82},
		{1 + 0x1p-8 + 0x1p-20, 0x3c04, 0x3f81},
		// binary16 overflow: 65504 is the largest finite, 65520 the tie to Inf.
		{65504, 0x7bff, 0x4780},
		{65519.996, 0x7bff, 0x4780},
		{65520, 0x7c00, 0x4780},
		{-1e6, 0xfc00, 0xc974},
		{math.MaxFloat32, 0x7c00, 0x7f80}, // bfloat16: rounds up past the largest finite
		{f(0x7f7f7fff), 0x7c00, 0x7f7f},
		{f(0x7f7f8000), 0x7c00, 0x7f80}, // tie, odd -> up -> Inf
		{f(0x7f7e8000), 0x7c00, 0x7f7e}, // tie, even -> down
		// binary16 subnormals: 2^-24 is the smallest; 2^-25 ties to 0.
		{0x1p-24, 0x0001, 0x3380},
		{0x1p-25, 0x0000, 0x3300},
		{0x1p-25 * 1.0000001, 0x0001, 0x3300},
		{3 * 0x1p-25, 0x0002, 0x33c0},
		{5 * 0x1p-25, 0x0002, 0x3420},
		{0x1p-14 - 0x1p-25, 0x0400, 0x3880}, // rounds up into the normals
		{0x1p-14 - 0x1p-24, 0x03ff, 0x3880},
		{-0x1p-20, 0x8010, 0xb580},
		{0x1p-26, 0, 0x3280},
		// bfloat16 subnormals (float32 subnormals).
		{f(0x00008000), 0, 0x0000},
		{f(0x00018000), 0, 0x0002},
		{f(0x00010000), 0, 0x0001},
		{f(0x007fffff), 0, 0x0080}, // rounds up to the smallest normal
		{math.SmallestNonzeroFloat32, 0, 0},
	}
	for _, c := range cases {
		if got := F32ToF16(c.in); got != c.f16 {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.in, got, c.f16)
		}
		if got := F32ToBF16(c.in); got != c.bf {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.in, got, c.bf)
		}
	}
	// NaNs: payload kept where it fits, quiet bit forced where it does not.
	nans := []struct {
		in      uint32
		f16, bf uint16
	}{
		{0x7fc00000, 0x7e00, 0x7fc0},
		{0xffc00000, 0xfe00, 0xffc0},
		{0x7f800001, 0x7e00, 0x7fc0}, // payload only in the low bits
		{0x7f802000, 0x7c01, 0x7fc0},
		{0x7fa00000, 0x7d00, 0x7fa0}, // signalling NaN stays as it is
	}
	for _, c := range nans {
		if got := F32ToF16(f(c.in)); got != c.f16 {
			t.Errorf("F32ToF16(%#08x) = %#04x, want %#04x", c.in, got, c.f16)
		}
		if got := F32ToBF16(f(c.in)); got != c.bf {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.bf)
		}
	}
}
