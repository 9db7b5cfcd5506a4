package collective

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// vecSpecials are float bit patterns the vector kernels must treat exactly
// as the portable loops do: signed zeros, infinities, subnormals, NaNs.
var vecSpecials = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, -5e-324, 1e-310, math.MaxFloat64, 1, -1}

// vecInput returns n elements of dt as bytes: random values mixed with
// specials (floats) or extremes (integers).
func vecInput(rng *rand.Rand, dt DType, n int) []byte {
	b := make([]byte, n*dt.Size())
	for i := range n {
		special := rng.IntN(8) == 0
		v := vecSpecials[rng.IntN(len(vecSpecials))]
		switch dt {
		case Float32:
			f := float32(rng.NormFloat64() * 1e3)
			if special {
				f = float32(v)
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		case Float64:
			f := rng.NormFloat64() * 1e3
			if special {
				f = v
			}
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(f))
		case Int32:
			binary.LittleEndian.PutUint32(b[4*i:], rng.Uint32())
		case Int64:
			binary.LittleEndian.PutUint64(b[8*i:], rng.Uint64())
		default:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(rng.Uint32()))
		}
	}
	return b
}

// TestReduceVecMatchesPortable checks that the vector kernels give the same
// bits as the portable loops for every dtype and op, at lengths around the
// vector block and with misaligned starts. NaN results are compared as
// NaN, since their payload is unspecified (see Combine).
func TestReduceVecMatchesPortable(t *testing.T) {
	if !useVec {
		t.Skip("no vector kernels on this machine")
	}
	defer func(v bool) { useVec = v }(useVec)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []DType{Float32, Float64, Int32, Int64, Float16, BFloat16} {
		for _, op := range []Op{Sum, Prod, Max, Min, Mean} {
			for _, n := range []int{0, 1, 7, 31, 32, 33, 63, 64, 65, 1000, 4099} {
				for _, skew := range []int{0, 1} {
					d := vecInput(rng, dt, n+skew)[skew*dt.Size():]
					s := vecInput(rng, dt, n+skew)[skew*dt.Size():]
					want := bytes.Clone(d)
					useVec = false
					if err := CombineBytes(dt, want, s, op); err != nil {
						t.Fatal(err)
					}
					useVec = true
					if err := CombineBytes(dt, d, s, op); err != nil {
						t.Fatal(err)
					}
					if i := vecMismatch(dt, d, want); i >= 0 {
						t.Fatalf("%v %v n=%d skew=%d: element %d differs: vector %x, portable %x", dt, op, n, skew, i,
							d[i*dt.Size():(i+1)*dt.Size()], want[i*dt.Size():(i+1)*dt.Size()])
					}
				}
			}
		}
	}
}

// vecMismatch returns the first element index at which a and b differ
// (NaNs of any payload are equal), or -1.
func vecMismatch(dt DType, a, b []byte) int {
	esz := dt.Size()
	for i := 0; i < len(a)/esz; i++ {
		x, y := a[i*esz:(i+1)*esz], b[i*esz:(i+1)*esz]
		if bytes.Equal(x, y) {
			continue
		}
		switch dt {
		case Float32:
			if math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(x)))) &&
				math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(y)))) {
				continue
			}
		case Float64:
			if math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(x))) &&
				math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(y))) {
				continue
			}
		}
		return i
	}
	return -1
}
