package collective

import "strconv"

// Combine16 folds src into dst element-wise for 16-bit floating-point
// data (dt is Float16 or BFloat16; elements are bit patterns):
//
//	dst[i] = round16(f32(dst[i]) op f32(src[i]))
//
// where f32 is the exact widening (F16ToF32 or BF16ToF32) and round16 the
// round-to-nearest-even narrowing (F32ToF16 or F32ToBF16). Every partial
// result is thus stored in 16 bits: precision is that of the 16-bit type,
// whatever the number of contributions. For Sum and Prod the float32
// intermediate has at least 2p+2 bits (p = 11 or 8), so the double rounding
// is innocuous and the result is the correctly rounded 16-bit value of the
// exact sum or product. Max and Min are exact and select one operand's bits
// unchanged, with the rules of Combine (-0 below +0; NaN propagates, dst's
// NaN first). Mean reduces as Sum; finish it with Finish16.
//
// Like Combine, Combine16 is deterministic (up to the payload of NaNs
// produced by Sum, Prod or Mean) and does no reassociation. It
// panics if the lengths differ, dt is not Float16 or BFloat16, or op is
// invalid. dst and src must be the same slice or not overlap.
func Combine16(dt DType, dst, src []uint16, op Op) {
	if len(dst) != len(src) {
		panic("collective: Combine16: dst has " + strconv.Itoa(len(dst)) + " elements, src " + strconv.Itoa(len(src)))
	}
	if !op.valid() {
		panic("collective: Combine16: invalid op " + op.String())
	}
	switch dt {
	case Float16:
		reduceF16(dst, src, op)
	case BFloat16:
		reduceBF16(dst, src, op)
	default:
		panic("collective: Combine16: dtype " + dt.String() + " is not a 16-bit float")
	}
}

// Finish16 is Finish for 16-bit floating-point data: for Mean,
// data[i] = round16(f32(data[i]) / float32(n)); a no-op for other ops. It
// panics if dt is not Float16 or BFloat16, op is invalid, or op is Mean and
// n <= 0.
func Finish16(dt DType, data []uint16, op Op, n int) {
	if dt != Float16 && dt != BFloat16 {
		panic("collective: Finish16: dtype " + dt.String() + " is not a 16-bit float")
	}
	if !op.valid() {
		panic("collective: Finish16: invalid op " + op.String())
	}
	if op != Mean {
		return
	}
	if n <= 0 {
		panic("collective: Finish16: mean count must be positive, got " + strconv.Itoa(n))
	}
	f := float32(n)
	if dt == Float16 {
		for i, h := range data {
			data[i] = F32ToF16(F16ToF32(h) / f)
		}
		return
	}
	for i, h := range data {
		data[i] = F32ToBF16(BF16ToF32(h) / f)
	}
}

func reduceF16(d, s []uint16, op Op) {
	s = s[:len(d)]
	switch op {
	case Sum, Mean:
		for i := range d {
			d[i] = F32ToF16(F16ToF32(d[i]) + F16ToF32(s[i]))
		}
	case Prod:
		for i := range d {
			d[i] = F32ToF16(F16ToF32(d[i]) * F16ToF32(s[i]))
		}
	case Max:
		max16(d, s, 0x7c00)
	case Min:
		min16(d, s, 0x7c00)
	}
}

func reduceBF16(d, s []uint16, op Op) {
	s = s[:len(d)]
	switch op {
	case Sum, Mean:
		for i := range d {
			d[i] = F32ToBF16(BF16ToF32(d[i]) + BF16ToF32(s[i]))
		}
	case Prod:
		for i := range d {
			d[i] = F32ToBF16(BF16ToF32(d[i]) * BF16ToF32(s[i]))
		}
	case Max:
		max16(d, s, 0x7f80)
	case Min:
		min16(d, s, 0x7f80)
	}
}

// key16 maps a non-NaN 16-bit float (either format) to an unsigned key
// with the same order, -0 just below +0.
func key16(h uint16) uint16 {
	return h ^ (uint16(int16(h)>>15) | 0x8000)
}

// max16 and min16 work on the bits directly (both formats are
// sign-magnitude with the exponent above the mantissa). inf is the bit
// pattern of +Inf; anything above it, sign aside, is a NaN.
func max16(d, s []uint16, inf uint16) {
	s = s[:len(d)]
	for i, b := range s {
		a := d[i]
		if a&0x7fff > inf {
			continue // dst NaN wins
		}
		if b&0x7fff > inf || key16(b) > key16(a) {
			d[i] = b
		}
	}
}

func min16(d, s []uint16, inf uint16) {
	s = s[:len(d)]
	for i, b := range s {
		a := d[i]
		if a&0x7fff > inf {
			continue
		}
		if b&0x7fff > inf || key16(b) < key16(a) {
			d[i] = b
		}
	}
}
