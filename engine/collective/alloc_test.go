package collective

import "testing"

// TestNoAllocs proves that the kernels and views do not allocate.
func TestNoAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("AllocsPerRun")
	}
	const n = 4096
	f32a, f32b := make([]float32, n), make([]float32, n)
	f64a, f64b := make([]float64, n), make([]float64, n)
	i32a, i32b := make([]int32, n), make([]int32, n)
	i64a, i64b := make([]int64, n), make([]int64, n)
	h16a, h16b := make([]uint16, n), make([]uint16, n)
	for i := range n {
		f32a[i], f32b[i] = float32(i), 1
		f64a[i], f64b[i] = float64(i), 1
		i32a[i], i32b[i] = int32(i), 1
		i64a[i], i64b[i] = int64(i), 1
		h16a[i], h16b[i] = uint16(i), 0x3c00
	}
	bytes := map[DType][2][]byte{
		Float32:  {AsBytes(f32a), AsBytes(f32b)},
		Float64:  {AsBytes(f64a), AsBytes(f64b)},
		Int32:    {AsBytes(i32a), AsBytes(i32b)},
		Int64:    {AsBytes(i64a), AsBytes(i64b)},
		Float16:  {AsBytes16(h16a), AsBytes16(h16b)},
		BFloat16: {AsBytes16(h16a), AsBytes16(h16b)},
	}
	for _, op := range allOps {
		cases := map[string]func(){
			"Combine float32": func() { Combine(f32a, f32b, op); Finish(f32a, op, 2) },
			"Combine float64": func() { Combine(f64a, f64b, op); Finish(f64a, op, 2) },
			"Combine int32":   func() { Combine(i32a, i32b, op); Finish(i32a, op, 2) },
			"Combine int64":   func() { Combine(i64a, i64b, op); Finish(i64a, op, 2) },
			"Combine16 f16":   func() { Combine16(Float16, h16a, h16b, op); Finish16(Float16, h16a, op, 2) },
			"Combine16 bf16":  func() { Combine16(BFloat16, h16a, h16b, op); Finish16(BFloat16, h16a, op, 2) },
			"AsBytes/From":    func() { _, _ = FromBytes[float64](AsBytes(f64a)) },
			"AsBytes16/From":  func() { _, _ = FromBytes16(AsBytes16(h16a)) },
			"CombineBytes all": func() {
				for _, dt := range allDTypes {
					if CombineBytes(dt, bytes[dt][0], bytes[dt][1], op) != nil || FinishBytes(dt, bytes[dt][0], op, 2) != nil {
						panic("unexpected error")
					}
				}
			},
		}
		for name, f := range cases {
			if a := testing.AllocsPerRun(20, f); a != 0 {
				t.Errorf("%s %v: %v allocs per run", name, op, a)
			}
		}
	}
}
