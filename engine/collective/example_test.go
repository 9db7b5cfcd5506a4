package collective_test

import (
	"fmt"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// Averaging gradients from three ranks: reduce the contributions into one
// buffer, then Finish divides by the count.
func Example() {
	grad := []float32{1, 2, 3, 4}
	fromRank1 := []float32{3, 2, 1, 0}
	fromRank2 := []float32{2, 2, 2, 2}

	collective.Combine(grad, fromRank1, collective.Mean)
	collective.Combine(grad, fromRank2, collective.Mean)
	collective.Finish(grad, collective.Mean, 3)
	fmt.Println(grad)

	// The same on raw bytes, as received from the transport.
	a := collective.AsBytes([]int64{5, -7, 9})
	b := collective.AsBytes([]int64{1, 8, -9})
	if err := collective.CombineBytes(collective.Int64, a, b, collective.Max); err != nil {
		panic(err)
	}
	v, _ := collective.FromBytes[int64](a)
	fmt.Println(v)

	// bfloat16: combined in float32, rounded back to 16 bits.
	h := []uint16{collective.F32ToBF16(1.5)}
	collective.Combine16(collective.BFloat16, h, []uint16{collective.F32ToBF16(0.25)}, collective.Sum)
	fmt.Println(collective.BF16ToF32(h[0]))
	// Output:
	// [2 2 2 2]
	// [5 8 9]
	// 1.75
}
