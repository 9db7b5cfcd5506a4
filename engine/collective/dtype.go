package collective

import (
	"strconv"
	"unsafe"
)

// DType is the element type of a buffer being reduced. The zero value is
// not a valid DType, so an unset field is caught rather than silently read
// as float32.
type DType uint8

// Element types. Float16 and BFloat16 elements are stored as uint16 bit
// patterns (IEEE 754 binary16 and bfloat16 respectively).
const (
	Float32 DType = iota + 1
	Float64
	Int32
	Int64
	Float16
	BFloat16
)

// Size returns the size of one element in bytes, or 0 for an invalid DType.
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Float64, Int64:
		return 8
	case Float16, BFloat16:
		return 2
	}
	return 0
}

// String returns the lower-case name of d ("float32", "bfloat16", ...).
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Float16:
		return "float16"
	case BFloat16:
		return "bfloat16"
	}
	return "DType(" + strconv.Itoa(int(d)) + ")"
}

// Op is a reduction operator. The zero value is not a valid Op.
type Op uint8

// Reduction operators. Mean reduces exactly as Sum; the caller divides by
// the number of contributions at the end with Finish (or FinishBytes).
const (
	Sum Op = iota + 1
	Mean
	Max
	Min
	Prod
)

// String returns the lower-case name of o ("sum", "max", ...).
func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Max:
		return "max"
	case Min:
		return "min"
	case Prod:
		return "prod"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

func (o Op) valid() bool { return o >= Sum && o <= Prod }

// Elem is the set of element types the generic kernels accept. Types whose
// underlying type is one of these (type Logit float32) are accepted too and
// reduce exactly like their underlying type.
type Elem interface {
	~float32 | ~float64 | ~int32 | ~int64
}

// DTypeOf returns the DType of T: Float32, Float64, Int32 or Int64.
func DTypeOf[T Elem]() DType {
	var x T = 1
	x /= 2 // 0.5 for floating-point types, 0 for integers
	isFloat := x != 0
	switch {
	case isFloat && unsafe.Sizeof(x) == 4:
		return Float32
	case isFloat:
		return Float64
	case unsafe.Sizeof(x) == 4:
		return Int32
	default:
		return Int64
	}
}
