package collective

import (
	"math"
	"math/bits"
)

// 16-bit floating-point conversions. They use integer operations only, so
// they give the same bits on every architecture. Converting a 16-bit value
// to float32 is exact; converting back rounds to nearest, ties to even.
// NaNs stay NaN: the sign and the top payload bits are kept, and a NaN
// whose kept payload would be zero gets the quiet bit set (it would
// otherwise read as an infinity). In particular F32ToF16(F16ToF32(h)) == h
// and F32ToBF16(BF16ToF32(h)) == h for all 65536 values of h, NaNs
// included.

// F16ToF32 converts an IEEE 754 binary16 value to float32, exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h>>10) & 0x1f
	m := uint32(h & 0x3ff)
	switch {
	case e == 0x1f: // Inf, NaN
		return math.Float32frombits(sign | 0x7f800000 | m<<13)
	case e != 0: // normal: rebias 15 -> 127
		return math.Float32frombits(sign | (e+112)<<23 | m<<13)
	case m == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal m·2^-24: normalise. p is the index of m's top bit (0..9).
	p := uint32(31 - bits.LeadingZeros32(m))
	return math.Float32frombits(sign | (p+103)<<23 | (m<<(23-p))&0x7fffff)
}

// F32ToF16 converts f to IEEE 754 binary16, rounding to nearest, ties to
// even. Magnitudes that round to 65520 or beyond become ±Inf; magnitudes
// at or below 2^-25 become ±0; values in between that are below 2^-14 become
// subnormals. NaNs stay NaN (see above).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	b &= 0x7fffffff
	switch {
	case b >= 0x7f800000: // Inf, NaN
		if b == 0x7f800000 {
			return sign | 0x7c00
		}
		m := uint16(b>>13) & 0x3ff
		if m == 0 {
			m = 0x200 // keep it a NaN
		}
		return sign | 0x7c00 | m
	case b >= 0x47800000: // >= 2^16: Inf
		return sign | 0x7c00
	case b >= 0x38800000: // >= 2^-14: normal (may round up to Inf)
		b -= 112 << 23
		b += 0xfff + (b>>13)&1
		return sign | uint16(b>>13)
	case b >= 0x33000000: // >= 2^-25: subnormal (may round up to 2^-14)
		e := b >> 23
		s := b&0x7fffff | 0x800000
		shift := 126 - e // 14..24
		m := s >> shift
		rem := s & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && m&1 != 0 {
			m++
		}
		return sign | uint16(m)
	}
	return sign
}

// BF16ToF32 converts a bfloat16 value to float32, exactly.
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 converts f to bfloat16, rounding to nearest, ties to even
// (values that round beyond the largest finite bfloat16 become ±Inf).
// NaNs stay NaN (see above).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		h := uint16(b >> 16)
		if h&0x7f == 0 {
			h |= 0x40 // keep it a NaN
		}
		return h
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
