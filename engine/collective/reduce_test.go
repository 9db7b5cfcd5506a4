package collective

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

var (
	allOps    = []Op{Sum, Mean, Max, Min, Prod}
	allDTypes = []DType{Float32, Float64, Int32, Int64, Float16, BFloat16}
	testLens  = []int{0, 1, 7, 1000, 1<<20 + 3}
)

// meanN is the count Finish divides by in the tests: not a power of two,
// so the division rounds.
const meanN = 3

func TestDTypeAndOp(t *testing.T) {
	sizes := map[DType]int{Float32: 4, Float64: 8, Int32: 4, Int64: 8, Float16: 2, BFloat16: 2}
	names := map[DType]string{Float32: "float32", Float64: "float64", Int32: "int32", Int64: "int64", Float16: "float16", BFloat16: "bfloat16"}
	for _, d := range allDTypes {
		if d.Size() != sizes[d] || d.String() != names[d] {
			t.Errorf("%d: Size %d String %q", d, d.Size(), d.String())
		}
	}
	for _, d := range []DType{0, BFloat16 + 1, 255} {
		if d.Size() != 0 || d.String() != fmt.Sprintf("DType(%d)", d) {
			t.Errorf("invalid %d: Size %d String %q", d, d.Size(), d.String())
		}
	}
	for o, s := range map[Op]string{Sum: "sum", Mean: "mean", Max: "max", Min: "min", Prod: "prod", 0: "Op(0)", Prod + 1: "Op(6)"} {
		if o.String() != s {
			t.Errorf("Op %d String %q, want %q", o, o.String(), s)
		}
	}
	type logit float32
	type count int64
	type score float64
	type idx int32
	for got, want := range map[DType]DType{
		DTypeOf[float32](): Float32, DTypeOf[float64](): Float64,
		DTypeOf[int32](): Int32, DTypeOf[int64](): Int64,
	} {
		if got != want {
			t.Errorf("DTypeOf: %v, want %v", got, want)
		}
	}
	if DTypeOf[logit]() != Float32 || DTypeOf[count]() != Int64 || DTypeOf[score]() != Float64 || DTypeOf[idx]() != Int32 {
		t.Error("DTypeOf on named types")
	}
}

// ---- random data ----

func randFloat(r *rand.Rand) float64 {
	if r.IntN(100) == 0 {
		specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1}
		return specials[r.IntN(len(specials))]
	}
	return (r.Float64()*2 - 1) * math.Ldexp(1, r.IntN(21)-10)
}

func randF32s(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(randFloat(r))
	}
	return s
}

func randF64s(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = randFloat(r)
	}
	return s
}

func randI32s(r *rand.Rand, n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		if r.IntN(2) == 0 {
			s[i] = int32(r.Uint32()) // full range: Sum and Prod wrap
		} else {
			s[i] = int32(r.IntN(201) - 100)
		}
	}
	return s
}

func randI64s(r *rand.Rand, n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		if r.IntN(2) == 0 {
			s[i] = int64(r.Uint64())
		} else {
			s[i] = int64(r.IntN(201) - 100)
		}
	}
	return s
}

func rand16s(r *rand.Rand, n int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		s[i] = uint16(r.Uint32()) // every bit pattern: NaN, Inf, subnormals
	}
	return s
}

// ---- float64 reference with the documented Max/Min rules ----

// refMaxMin returns which operand Max (or Min) must select: the first
// NaN, else the larger (smaller), -0 below +0.
func refMaxMin(a, b float64, isMax bool) (takeB bool) {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	case a == b:
		if isMax {
			return math.Signbit(a) && !math.Signbit(b)
		}
		return !math.Signbit(a) && math.Signbit(b)
	case isMax:
		return b > a
	default:
		return b < a
	}
}

func refFloat(a, b float64, op Op) float64 {
	switch op {
	case Sum:
		return a + b
	case Mean:
		return (a + b) / meanN
	case Prod:
		return a * b
	default:
		if refMaxMin(a, b, op == Max) {
			return b
		}
		return a
	}
}

func TestReduceFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range testLens {
		a0, b := randF32s(r, n), randF32s(r, n)
		for _, op := range allOps {
			a := append([]float32(nil), a0...)
			Combine(a, b, op)
			Finish(a, op, meanN)
			bad := 0
			for i := range a {
				x, y := float64(a0[i]), float64(b[i])
				ref := refFloat(x, y, op)
				got := float64(a[i])
				ok := true
				switch {
				case op == Max || op == Min:
					// Exact: the selected operand's bits.
					want := a0[i]
					if refMaxMin(x, y, op == Max) {
						want = b[i]
					}
					ok = math.Float32bits(a[i]) == math.Float32bits(want)
				case math.IsNaN(ref):
					ok = math.IsNaN(got)
				case math.IsInf(ref, 0):
					ok = got == ref
				default:
					// Documented tolerance: each float32 rounding is within
					// 2^-24 relative of its exact result; Sum and Prod
					// round once, Mean twice (sum, then division).
					tol := 0x1p-24
					if op == Mean {
						tol = 0x1p-23
					}
					ok = math.Abs(got-ref) <= tol*math.Abs(ref)
				}
				if !ok {
					if bad++; bad < 5 {
						t.Errorf("n=%d %v [%d]: %v op %v = %v, reference %v", n, op, i, a0[i], b[i], a[i], ref)
					}
				}
			}
		}
	}
}

func TestReduceFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range testLens {
		a0, b := randF64s(r, n), randF64s(r, n)
		for _, op := range allOps {
			a := append([]float64(nil), a0...)
			Combine(a, b, op)
			Finish(a, op, meanN)
			bad := 0
			for i := range a {
				// The reference is the same IEEE operation: exact.
				ref := refFloat(a0[i], b[i], op)
				if math.Float64bits(a[i]) != math.Float64bits(ref) && !(math.IsNaN(ref) && math.IsNaN(a[i]) && op != Max && op != Min) {
					if bad++; bad < 5 {
						t.Errorf("n=%d %v [%d]: %v op %v = %v, reference %v", n, op, i, a0[i], b[i], a[i], ref)
					}
				}
			}
		}
	}
}

func TestReduceInt32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range testLens {
		a0, b := randI32s(r, n), randI32s(r, n)
		for _, op := range allOps {
			a := append([]int32(nil), a0...)
			Combine(a, b, op)
			Finish(a, op, meanN)
			bad := 0
			for i := range a {
				x, y := int64(a0[i]), int64(b[i])
				var ref int32
				switch op {
				case Sum:
					ref = int32(x + y) // low 32 bits: the wrapped sum
				case Mean:
					ref = int32(int64(int32(x+y)) / meanN)
				case Prod:
					ref = int32(x * y)
				case Max:
					ref = int32(max(x, y))
				case Min:
					ref = int32(min(x, y))
				}
				if a[i] != ref {
					if bad++; bad < 5 {
						t.Errorf("n=%d %v [%d]: %d op %d = %d, want %d", n, op, i, x, y, a[i], ref)
					}
				}
			}
		}
	}
}

func TestReduceInt64(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range testLens {
		a0, b := randI64s(r, n), randI64s(r, n)
		for _, op := range allOps {
			a := append([]int64(nil), a0...)
			Combine(a, b, op)
			Finish(a, op, meanN)
			bad := 0
			for i := range a {
				x, y := a0[i], b[i]
				var ref int64
				switch op {
				case Sum:
					s, _ := bits.Add64(uint64(x), uint64(y), 0)
					ref = int64(s)
				case Mean:
					s, _ := bits.Add64(uint64(x), uint64(y), 0)
					ref = int64(s) / meanN
				case Prod:
					_, lo := bits.Mul64(uint64(x), uint64(y))
					ref = int64(lo)
				case Max:
					ref = x
					if y > x {
						ref = y
					}
				case Min:
					ref = x
					if y < x {
						ref = y
					}
				}
				if a[i] != ref {
					if bad++; bad < 5 {
						t.Errorf("n=%d %v [%d]: %d op %d = %d, want %d", n, op, i, x, y, a[i], ref)
					}
				}
			}
		}
	}
}

type half struct {
	dt         DType
	toF32      func(uint16) float32
	fromF      func(float32) uint16
	refNearest func(float64) uint16
}

func halves() []half {
	return []half{
		{Float16, F16ToF32, F32ToF16, nearestF16},
		{BFloat16, BF16ToF32, F32ToBF16, nearestBF16},
	}
}

// TestReduce16 checks that every result equals the rounding of the float32
// computation exactly (bits), that Max and Min select an operand's bits
// by the float rules, and that Sum and Prod are correctly rounded (equal to
// the nearest 16-bit value of the exact float64 result).
func TestReduce16(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, h := range halves() {
		for _, n := range testLens {
			a0, b := rand16s(r, n), rand16s(r, n)
			for _, op := range allOps {
				a := append([]uint16(nil), a0...)
				Combine16(h.dt, a, b, op)
				Finish16(h.dt, a, op, meanN)
				bad := 0
				for i := range a {
					x, y := h.toF32(a0[i]), h.toF32(b[i])
					var want uint16
					var exact float64
					switch op {
					case Sum:
						want = h.fromF(x + y)
						exact = float64(x) + float64(y)
					case Mean:
						want = h.fromF(h.toF32(h.fromF(x+y)) / meanN)
						exact = math.NaN()
					case Prod:
						want = h.fromF(x * y)
						exact = float64(x) * float64(y)
					default:
						want = a0[i]
						if refMaxMin(float64(x), float64(y), op == Max) {
							want = b[i]
						}
						exact = math.NaN()
					}
					ok := a[i] == want
					if isNaN16(h.dt, want) && (op == Sum || op == Mean || op == Prod) {
						// Arithmetic NaN payloads are unspecified (with two
						// NaN operands x86 returns the first, and the
						// compiler may commute the operands).
						ok = isNaN16(h.dt, a[i])
					}
					if ok && !math.IsNaN(exact) {
						ok = h.refNearest(exact) == a[i]
					}
					if !ok {
						if bad++; bad < 5 {
							t.Errorf("%v n=%d %v [%d]: %#04x op %#04x = %#04x, want %#04x (exact %v -> %#04x)",
								h.dt, n, op, i, a0[i], b[i], a[i], want, exact, h.refNearest(exact))
						}
					}
				}
			}
		}
	}
}

// TestSpecials runs every op on every pair of special values, for every
// float type, against the documented rules.
func TestSpecials(t *testing.T) {
	negZero := math.Copysign(0, -1)
	nan2 := math.Float64frombits(0x7ff8000000000123) // a second NaN payload
	sp := []float64{math.NaN(), nan2, math.Inf(1), math.Inf(-1), 0, negZero, 1, -1, 2.5}
	var a, b []float64
	for _, x := range sp {
		for _, y := range sp {
			a, b = append(a, x), append(b, y)
		}
	}
	for _, op := range []Op{Max, Min} {
		d := append([]float64(nil), a...)
		Combine(d, b, op)
		d32 := make([]float32, len(a))
		s32 := make([]float32, len(a))
		for i := range a {
			d32[i], s32[i] = float32(a[i]), float32(b[i])
		}
		o32 := append([]float32(nil), d32...)
		Combine(d32, s32, op)
		for i := range a {
			want, want32 := a[i], o32[i]
			if refMaxMin(a[i], b[i], op == Max) {
				want, want32 = b[i], s32[i]
			}
			if math.Float64bits(d[i]) != math.Float64bits(want) {
				t.Errorf("float64 %v(%v, %v) = %v (%#x), want %#x", op, a[i], b[i], d[i], math.Float64bits(d[i]), math.Float64bits(want))
			}
			if math.Float32bits(d32[i]) != math.Float32bits(want32) {
				t.Errorf("float32 %v(%v, %v) = %v, want %v", op, a[i], b[i], d32[i], want32)
			}
		}
		for _, h := range halves() {
			d16, s16 := make([]uint16, len(a)), make([]uint16, len(a))
			for i := range a {
				d16[i], s16[i] = h.fromF(float32(a[i])), h.fromF(float32(b[i]))
			}
			o16 := append([]uint16(nil), d16...)
			Combine16(h.dt, d16, s16, op)
			for i := range a {
				want := o16[i]
				if refMaxMin(float64(h.toF32(o16[i])), float64(h.toF32(s16[i])), op == Max) {
					want = s16[i]
				}
				if d16[i] != want {
					t.Errorf("%v %v(%#04x, %#04x) = %#04x, want %#04x", h.dt, op, o16[i], s16[i], d16[i], want)
				}
			}
		}
	}
	// Max(-0, +0) = +0 and Min(+0, -0) = -0 in both orders.
	for _, c := range [][2]float64{{negZero, 0}, {0, negZero}} {
		mx, mn := []float64{c[0]}, []float64{c[0]}
		Combine(mx, []float64{c[1]}, Max)
		Combine(mn, []float64{c[1]}, Min)
		if math.Signbit(mx[0]) || !math.Signbit(mn[0]) {
			t.Errorf("Max/Min(%v, %v) = %v, %v", c[0], c[1], mx[0], mn[0])
		}
	}
}

// TestDeterminism reduces the same inputs repeatedly (and through the
// byte-slice path) and requires identical bits every time.
func TestDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const n, k = 4099, 4
	f32 := make([][]float32, k)
	u16 := make([][]uint16, k)
	for j := range k {
		f32[j], u16[j] = randF32s(r, n), rand16s(r, n)
	}
	for _, op := range allOps {
		var first []byte
		for rep := range 3 {
			acc := append([]float32(nil), f32[0]...)
			for j := 1; j < k; j++ {
				if rep == 2 {
					if err := CombineBytes(Float32, AsBytes(acc), AsBytes(f32[j]), op); err != nil {
						t.Fatal(err)
					}
				} else {
					Combine(acc, f32[j], op)
				}
			}
			Finish(acc, op, k)
			got := append([]byte(nil), AsBytes(acc)...)
			if first == nil {
				first = got
			} else if string(got) != string(first) {
				t.Fatalf("float32 %v: repetition %d differs", op, rep)
			}
		}
		for _, dt := range []DType{Float16, BFloat16} {
			var first16 []uint16
			for range 3 {
				acc := append([]uint16(nil), u16[0]...)
				for j := 1; j < k; j++ {
					Combine16(dt, acc, u16[j], op)
				}
				Finish16(dt, acc, op, k)
				if first16 == nil {
					first16 = acc
				} else {
					for i := range acc {
						if acc[i] != first16[i] {
							t.Fatalf("%v %v: element %d differs: %#04x vs %#04x", dt, op, i, acc[i], first16[i])
						}
					}
				}
			}
		}
	}
}

func TestAliasedDst(t *testing.T) {
	x := []float64{1, -2, 3}
	Combine(x, x, Sum)
	if x[0] != 2 || x[1] != -4 || x[2] != 6 {
		t.Fatal(x)
	}
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

func TestPanics(t *testing.T) {
	mustPanic(t, "Combine lengths", func() { Combine(make([]float32, 2), make([]float32, 3), Sum) })
	mustPanic(t, "Combine op", func() { Combine(make([]int32, 2), make([]int32, 2), 0) })
	mustPanic(t, "Combine op empty", func() { Combine[int64](nil, nil, Prod+1) })
	mustPanic(t, "Finish op", func() { Finish(make([]float64, 2), 0, 1) })
	mustPanic(t, "Finish n", func() { Finish(make([]float64, 2), Mean, 0) })
	mustPanic(t, "Combine16 dtype", func() { Combine16(Float32, make([]uint16, 2), make([]uint16, 2), Sum) })
	mustPanic(t, "Combine16 lengths", func() { Combine16(Float16, make([]uint16, 2), make([]uint16, 1), Sum) })
	mustPanic(t, "Combine16 op", func() { Combine16(BFloat16, nil, nil, 9) })
	mustPanic(t, "Finish16 dtype", func() { Finish16(Int32, nil, Sum, 1) })
	mustPanic(t, "Finish16 n", func() { Finish16(Float16, nil, Mean, -1) })
	// Finish with a count beyond the element type's range.
	v := []int32{math.MinInt32, math.MaxInt32, -5}
	Finish(v, Mean, 1<<31)
	if v[0] != -1 || v[1] != 0 || v[2] != 0 {
		t.Errorf("Finish int32 by 2^31: %v", v)
	}
	// Non-Mean ops leave data untouched, even with a bad count.
	w := []float32{1, 2}
	Finish(w, Sum, 0)
	if w[0] != 1 || w[1] != 2 {
		t.Error(w)
	}
}
