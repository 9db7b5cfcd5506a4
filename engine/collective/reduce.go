package collective

import (
	"math"
	"strconv"
	"unsafe"
)

// Combine folds src into dst element-wise: dst[i] = dst[i] op src[i],
// on this rank alone: the local kernel every collective reduces with
// (the collective reduce, MPI_Reduce's counterpart, is ReduceTo).
//
// Mean reduces as Sum; call Finish once all contributions are in. dst and
// src must have the same length and must either be the same slice or not
// overlap. Combine panics if the lengths differ or op is invalid.
//
// Integers: Sum and Prod wrap around on overflow (two's complement, as Go
// arithmetic does).
//
// Floating point: Sum and Prod are one IEEE operation per element, rounded
// to nearest even. Max and Min are exact; -0 orders below +0 (Max(-0, +0)
// is +0, Min is -0), and a NaN in either operand makes the result NaN: if
// dst[i] is NaN it is kept, otherwise src[i]'s NaN is taken, so the payload
// of the first NaN in reduction order survives.
//
// Combine is deterministic: the same inputs give the same bits, on every
// architecture, except for the sign and payload of a NaN produced by Sum,
// Prod or Mean, which are unspecified (hardware- and compiler-dependent:
// the result is a NaN, but with two NaN operands x86 returns the first,
// and the compiler may commute the operands). It performs no
// reassociation and contains no multiply-add that could be fused, so as long
// as every rank applies contributions in the same order, every rank gets a
// bit-identical result.
func Combine[T Elem](dst, src []T, op Op) {
	if len(dst) != len(src) {
		panic("collective: Combine: dst has " + strconv.Itoa(len(dst)) + " elements, src " + strconv.Itoa(len(src)))
	}
	if !op.valid() {
		panic("collective: Combine: invalid op " + op.String())
	}
	n := len(dst)
	if n == 0 {
		return
	}
	reducePtr(DTypeOf[T](), unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), n, op)
}

// reducePtr reduces n elements of dt at s into those at d: the one
// dispatch from a dtype to its kernel, shared by the typed and raw forms.
func reducePtr(dt DType, d, s unsafe.Pointer, n int, op Op) {
	if done := reduceVec(dt, d, s, n, op); done == n {
		return
	} else if done > 0 { // never point one past the end: checkptr forbids it
		off := uintptr(done * dt.Size())
		d, s, n = unsafe.Add(d, off), unsafe.Add(s, off), n-done
	}
	switch dt {
	case Float32:
		reduceFloat(unsafe.Slice((*float32)(d), n), unsafe.Slice((*float32)(s), n), op)
	case Float64:
		reduceFloat(unsafe.Slice((*float64)(d), n), unsafe.Slice((*float64)(s), n), op)
	case Int32:
		reduceInt(unsafe.Slice((*int32)(d), n), unsafe.Slice((*int32)(s), n), op)
	case Int64:
		reduceInt(unsafe.Slice((*int64)(d), n), unsafe.Slice((*int64)(s), n), op)
	case Float16:
		reduceF16(unsafe.Slice((*uint16)(d), n), unsafe.Slice((*uint16)(s), n), op)
	case BFloat16:
		reduceBF16(unsafe.Slice((*uint16)(d), n), unsafe.Slice((*uint16)(s), n), op)
	}
}

// Finish completes a reduction: for Mean it divides every element by n, the
// number of contributions; for every other op it does nothing. Floating-
// point elements are divided (not multiplied by 1/n), one correctly rounded
// division each. Integer elements use Go's truncating division (toward
// zero) of the already-wrapped sum, so a Mean whose Sum overflowed is
// meaningless. Finish panics if op is invalid, or if op is Mean and n <= 0.
func Finish[T Elem](data []T, op Op, n int) {
	if !op.valid() {
		panic("collective: Finish: invalid op " + op.String())
	}
	if op != Mean {
		return
	}
	if n <= 0 {
		panic("collective: Finish: mean count must be positive, got " + strconv.Itoa(n))
	}
	l := len(data)
	if l == 0 {
		return
	}
	divPtr(DTypeOf[T](), unsafe.Pointer(unsafe.SliceData(data)), l, n)
}

// divPtr divides l elements of dt at p by n (the Mean step): the one
// dispatch shared by Finish and FinishBytes.
func divPtr(dt DType, p unsafe.Pointer, l, n int) {
	switch dt {
	case Float32:
		divFloat(unsafe.Slice((*float32)(p), l), float32(n))
	case Float64:
		divFloat(unsafe.Slice((*float64)(p), l), float64(n))
	case Int32:
		divInt32(unsafe.Slice((*int32)(p), l), int64(n))
	case Int64:
		divInt64(unsafe.Slice((*int64)(p), l), int64(n))
	case Float16, BFloat16:
		Finish16(dt, unsafe.Slice((*uint16)(p), l), Mean, n)
	}
}

// The kernels below are instantiated only with basic types, so each is
// fully specialised: no dictionaries, no indirect calls. The op switch is
// outside the loops, and s = s[:len(d)] lets the compiler drop bounds
// checks.

// sumProd is the Sum (and Mean) and Prod loop every element type shares.
func sumProd[T float32 | float64 | int32 | int64](d, s []T, op Op) {
	s = s[:len(d)]
	if op == Prod {
		for i := range d {
			d[i] *= s[i]
		}
		return
	}
	for i := range d {
		d[i] += s[i]
	}
}

func reduceFloat[T float32 | float64](d, s []T, op Op) {
	s = s[:len(d)]
	switch op {
	case Sum, Mean, Prod:
		sumProd(d, s, op)
	case Max:
		for i, b := range s {
			a := d[i]
			if b > a {
				d[i] = b
			} else if b == a {
				// Only ±0 compare equal with different bits.
				if a == 0 && math.Signbit(float64(a)) {
					d[i] = b
				}
			} else if b != b && a == a {
				d[i] = b
			}
		}
	case Min:
		for i, b := range s {
			a := d[i]
			if b < a {
				d[i] = b
			} else if b == a {
				if a == 0 && math.Signbit(float64(b)) {
					d[i] = b
				}
			} else if b != b && a == a {
				d[i] = b
			}
		}
	}
}

func reduceInt[T int32 | int64](d, s []T, op Op) {
	s = s[:len(d)]
	switch op {
	case Sum, Mean, Prod:
		sumProd(d, s, op)
	case Max:
		for i := range d {
			d[i] = max(d[i], s[i])
		}
	case Min:
		for i := range d {
			d[i] = min(d[i], s[i])
		}
	}
}

func divFloat[T float32 | float64](d []T, n T) {
	for i := range d {
		d[i] /= n
	}
}

func divInt32(d []int32, n int64) {
	// In int64 so that an n beyond the int32 range divides correctly.
	for i := range d {
		d[i] = int32(int64(d[i]) / n)
	}
}

func divInt64(d []int64, n int64) {
	for i := range d {
		d[i] /= n
	}
}
