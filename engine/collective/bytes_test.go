package collective

import (
	"errors"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestReduceBytesMatchesTyped runs every dtype × op through CombineBytes and
// FinishBytes and requires the bits of the typed kernels.
func TestReduceBytesMatchesTyped(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const n = 1000
	for _, op := range allOps {
		check := func(dt DType, dst, src, want []byte) {
			t.Helper()
			if err := CombineBytes(dt, dst, src, op); err != nil {
				t.Fatalf("%v %v: %v", dt, op, err)
			}
			if err := FinishBytes(dt, dst, op, meanN); err != nil {
				t.Fatalf("%v %v: %v", dt, op, err)
			}
			if string(dst) != string(want) {
				t.Errorf("%v %v: CombineBytes differs from the typed kernel", dt, op)
			}
		}
		{
			a, b := randF32s(r, n), randF32s(r, n)
			w := append([]float32(nil), a...)
			Combine(w, b, op)
			Finish(w, op, meanN)
			check(Float32, AsBytes(a), AsBytes(b), AsBytes(w))
		}
		{
			a, b := randF64s(r, n), randF64s(r, n)
			w := append([]float64(nil), a...)
			Combine(w, b, op)
			Finish(w, op, meanN)
			check(Float64, AsBytes(a), AsBytes(b), AsBytes(w))
		}
		{
			a, b := randI32s(r, n), randI32s(r, n)
			w := append([]int32(nil), a...)
			Combine(w, b, op)
			Finish(w, op, meanN)
			check(Int32, AsBytes(a), AsBytes(b), AsBytes(w))
		}
		{
			a, b := randI64s(r, n), randI64s(r, n)
			w := append([]int64(nil), a...)
			Combine(w, b, op)
			Finish(w, op, meanN)
			check(Int64, AsBytes(a), AsBytes(b), AsBytes(w))
		}
		for _, dt := range []DType{Float16, BFloat16} {
			// Finite values only, so that NaN payloads cannot differ.
			a, b := make([]uint16, n), make([]uint16, n)
			for i := range a {
				a[i] = uint16(r.IntN(0x7000)) | uint16(r.IntN(2))<<15
				b[i] = uint16(r.IntN(0x7000)) | uint16(r.IntN(2))<<15
			}
			w := append([]uint16(nil), a...)
			Combine16(dt, w, b, op)
			Finish16(dt, w, op, meanN)
			check(dt, AsBytes16(a), AsBytes16(b), AsBytes16(w))
		}
	}
}

// aligned returns a byte slice of n bytes whose first byte is 8-aligned
// plus off.
func aligned(n, off int) []byte {
	b := make([]byte, n+16)
	p := uintptr(unsafe.Pointer(&b[0]))
	skip := int((8 - p%8) % 8)
	return b[skip+off : skip+off+n]
}

func TestReduceBytesErrors(t *testing.T) {
	tests := []struct {
		name     string
		dt       DType
		dst, src []byte
		op       Op
		want     error
	}{
		{"bad dtype", 0, aligned(8, 0), aligned(8, 0), Sum, ErrDType},
		{"bad dtype high", BFloat16 + 1, aligned(8, 0), aligned(8, 0), Sum, ErrDType},
		{"bad op", Float32, aligned(8, 0), aligned(8, 0), 0, ErrOp},
		{"bad op high", Float32, aligned(8, 0), aligned(8, 0), Prod + 1, ErrOp},
		{"length mismatch", Float32, aligned(8, 0), aligned(12, 0), Sum, ErrLengthMismatch},
		{"length mismatch empty", Int64, nil, aligned(8, 0), Sum, ErrLengthMismatch},
		{"not a multiple f64", Float64, aligned(12, 0), aligned(12, 0), Sum, ErrDTypeLength},
		{"not a multiple f32", Float32, aligned(6, 0), aligned(6, 0), Max, ErrDTypeLength},
		{"not a multiple bf16", BFloat16, aligned(3, 0), aligned(3, 0), Sum, ErrDTypeLength},
		{"misaligned dst", Float64, aligned(16, 4), aligned(16, 0), Sum, ErrAlignment},
		{"misaligned src", Int32, aligned(16, 0), aligned(16, 2), Sum, ErrAlignment},
		{"misaligned f16", Float16, aligned(4, 1), aligned(4, 0), Sum, ErrAlignment},
	}
	for _, tc := range tests {
		before := string(tc.dst)
		err := CombineBytes(tc.dt, tc.dst, tc.src, tc.op)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		if string(tc.dst) != before {
			t.Errorf("%s: dst modified", tc.name)
		}
		t.Logf("%s: %v", tc.name, err)
	}

	// Typed errors carry the details.
	var le *LengthError
	if err := CombineBytes(Float32, aligned(8, 0), aligned(4, 0), Sum); !errors.As(err, &le) ||
		le.DType != Float32 || le.DstLen != 8 || le.SrcLen != 4 || le.Func != "CombineBytes" {
		t.Errorf("LengthError: %v %+v", err, le)
	}
	var ae *AlignmentError
	src := aligned(8, 4)
	if err := CombineBytes(Int64, aligned(8, 0), src, Sum); !errors.As(err, &ae) ||
		ae.Arg != "src" || ae.Addr != uintptr(unsafe.Pointer(&src[0])) || ae.DType != Int64 {
		t.Errorf("AlignmentError: %v %+v", err, ae)
	}

	// Misaligned is fine for dtypes whose size divides the offset, and
	// empty buffers are fine whatever their address.
	if err := CombineBytes(Int32, aligned(8, 4), aligned(8, 4), Sum); err != nil {
		t.Error(err)
	}
	if err := CombineBytes(Float64, aligned(0, 3), aligned(0, 5), Sum); err != nil {
		t.Error(err)
	}
	if err := CombineBytes(Float64, nil, nil, Min); err != nil {
		t.Error(err)
	}
}

func TestFinishBytesErrors(t *testing.T) {
	tests := []struct {
		name string
		dt   DType
		data []byte
		op   Op
		n    int
		want error
	}{
		{"bad dtype", 0, aligned(8, 0), Mean, 2, ErrDType},
		{"bad op", Float32, aligned(8, 0), 7, 2, ErrOp},
		{"zero count", Float32, aligned(8, 0), Mean, 0, ErrCount},
		{"negative count", Int64, aligned(8, 0), Mean, -3, ErrCount},
		{"zero count empty", Int64, nil, Mean, 0, ErrCount},
		{"not a multiple", Float64, aligned(4, 0), Mean, 2, ErrDTypeLength},
		{"misaligned", Float32, aligned(8, 2), Mean, 2, ErrAlignment},
		{"misaligned f16", Float16, aligned(8, 1), Mean, 2, ErrAlignment},
	}
	for _, tc := range tests {
		if err := FinishBytes(tc.dt, tc.data, tc.op, tc.n); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Ops other than Mean ignore the count and the alignment.
	if err := FinishBytes(Float32, aligned(8, 2), Sum, 0); err != nil {
		t.Error(err)
	}
}

func TestViews(t *testing.T) {
	f := []float64{1.5, -2, 3}
	b := AsBytes(f)
	if len(b) != 24 || unsafe.Pointer(&b[0]) != unsafe.Pointer(&f[0]) {
		t.Fatalf("AsBytes: len %d", len(b))
	}
	g, err := FromBytes[float64](b)
	if err != nil || len(g) != 3 || &g[0] != &f[0] {
		t.Fatalf("FromBytes: %v %v", g, err)
	}
	g[1] = 7
	if f[1] != 7 {
		t.Error("FromBytes does not share memory")
	}
	type logit float32
	l, err := FromBytes[logit](AsBytes([]int32{0x3f800000}))
	if err != nil || len(l) != 1 || l[0] != 1 {
		t.Errorf("FromBytes[logit]: %v %v", l, err)
	}
	if AsBytes[int32](nil) != nil {
		t.Error("AsBytes(nil) != nil")
	}
	if s, err := FromBytes[int64](nil); s != nil || err != nil {
		t.Errorf("FromBytes(nil): %v %v", s, err)
	}
	if s, err := FromBytes[int64](aligned(0, 3)); len(s) != 0 || err != nil {
		t.Errorf("FromBytes(empty): %v %v", s, err)
	}
	if _, err := FromBytes[float32](aligned(6, 0)); !errors.Is(err, ErrDTypeLength) {
		t.Errorf("FromBytes length: %v", err)
	}
	if _, err := FromBytes[int64](aligned(8, 4)); !errors.Is(err, ErrAlignment) {
		t.Errorf("FromBytes alignment: %v", err)
	}
	h := []uint16{0x3c00, 0x7f80}
	hb := AsBytes16(h)
	h2, err := FromBytes16(hb)
	if err != nil || len(hb) != 4 || len(h2) != 2 || &h2[0] != &h[0] {
		t.Errorf("16-bit views: %v %v", h2, err)
	}
	if _, err := FromBytes16(aligned(4, 1)); !errors.Is(err, ErrAlignment) {
		t.Errorf("FromBytes16 alignment: %v", err)
	}
	if _, err := FromBytes16(aligned(3, 0)); !errors.Is(err, ErrDTypeLength) {
		t.Errorf("FromBytes16 length: %v", err)
	}
	// Go's allocator aligns byte slices of 8 bytes or more to 8.
	for n := 8; n <= 1<<16; n *= 3 {
		if p := uintptr(unsafe.Pointer(&make([]byte, n)[0])); p%8 != 0 {
			t.Errorf("make([]byte, %d) at %#x", n, p)
		}
	}
}
