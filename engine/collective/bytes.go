package collective

import "unsafe"

// CombineBytes is Combine (or Combine16) over raw buffers holding elements of
// type dt in native byte order: it views dst and src as element slices,
// without copying, and reduces src into dst.
//
// It returns an error, and leaves dst untouched, if dt or op is invalid
// (ErrDType, ErrOp), if the lengths differ (ErrLengthMismatch) or are not a
// multiple of dt.Size() (ErrDTypeLength), or if a non-empty dst or src does
// not start at an address that is a multiple of dt.Size() (ErrAlignment).
// Unaligned buffers are refused rather than handled: a misaligned typed
// view is not portable (some architectures fault on misaligned loads) and
// would hide a copy or a slow path inside what is meant to be zero-copy.
// Go's allocator aligns every make([]byte, n) with n >= 8 to 8 bytes, and
// buffers from the transport are page- or cache-line-aligned, so in
// practice only sub-slices at odd offsets fail.
func CombineBytes(dt DType, dst, src []byte, op Op) error {
	const fn = "CombineBytes"
	size := dt.Size()
	if size == 0 {
		return errDType(fn, dt)
	}
	if !op.valid() {
		return errOp(fn, op)
	}
	if len(dst) != len(src) {
		return &LengthError{Func: fn, DType: dt, DstLen: len(dst), SrcLen: len(src), Err: ErrLengthMismatch}
	}
	if len(dst)%size != 0 {
		return &LengthError{Func: fn, DType: dt, DstLen: len(dst), SrcLen: len(src), Err: ErrDTypeLength}
	}
	if len(dst) == 0 {
		return nil
	}
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	if uintptr(d)%uintptr(size) != 0 {
		return &AlignmentError{Func: fn, DType: dt, Arg: "dst", Addr: uintptr(d)}
	}
	if uintptr(s)%uintptr(size) != 0 {
		return &AlignmentError{Func: fn, DType: dt, Arg: "src", Addr: uintptr(s)}
	}
	reducePtr(dt, d, s, len(dst)/size, op)
	return nil
}

// FinishBytes is Finish (or Finish16) over a raw buffer of dt elements.
// It returns an error, leaving data untouched, if dt or op is invalid, if
// op is Mean and n <= 0 (ErrCount), or if data's length or alignment is
// wrong (as for CombineBytes).
func FinishBytes(dt DType, data []byte, op Op, n int) error {
	const fn = "FinishBytes"
	size := dt.Size()
	if size == 0 {
		return errDType(fn, dt)
	}
	if !op.valid() {
		return errOp(fn, op)
	}
	if len(data)%size != 0 {
		return &LengthError{Func: fn, DType: dt, DstLen: len(data), SrcLen: -1, Err: ErrDTypeLength}
	}
	if op != Mean {
		return nil
	}
	if n <= 0 {
		return errCount(fn, n)
	}
	if len(data) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(data))
	if uintptr(p)%uintptr(size) != 0 {
		return &AlignmentError{Func: fn, DType: dt, Arg: "data", Addr: uintptr(p)}
	}
	divPtr(dt, p, len(data)/size, n)
	return nil
}

// AsBytes returns the memory of s as a byte slice (native byte order),
// without copying: writes through either slice are seen by the other.
// Its length is len(s) times the element size; a nil s gives nil.
func AsBytes[T Elem](s []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// FromBytes returns the memory of b as a []T, without copying. It fails
// with ErrDTypeLength if len(b) is not a multiple of T's size and with
// ErrAlignment if a non-empty b is not aligned to T's size. An empty b
// gives an empty (nil if b is nil) slice.
func FromBytes[T Elem](b []byte) ([]T, error) {
	var z T
	size := int(unsafe.Sizeof(z))
	return fromBytes[T](b, size, DTypeOf[T]())
}

// AsBytes16 is AsBytes for 16-bit float data held as []uint16.
func AsBytes16(s []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*2)
}

// FromBytes16 is FromBytes for 16-bit float data: it views b as []uint16.
func FromBytes16(b []byte) ([]uint16, error) {
	return fromBytes[uint16](b, 2, Float16)
}

func fromBytes[T any](b []byte, size int, dt DType) ([]T, error) {
	if len(b)%size != 0 {
		return nil, &LengthError{Func: "FromBytes", DType: dt, DstLen: len(b), SrcLen: -1, Err: ErrDTypeLength}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if len(b) > 0 && uintptr(p)%uintptr(size) != 0 {
		return nil, &AlignmentError{Func: "FromBytes", DType: dt, Arg: "b", Addr: uintptr(p)}
	}
	if p == nil {
		return nil, nil
	}
	return unsafe.Slice((*T)(p), len(b)/size), nil
}
