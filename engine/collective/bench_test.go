package collective

import (
	"fmt"
	"testing"
)

// BenchmarkReduce measures Sum throughput (bytes of dst per second) at
// 4 KiB (cache-resident) and 4 MiB (memory-bound).
func BenchmarkReduce(b *testing.B) {
	for _, size := range []int{4 << 10, 4 << 20} {
		label := fmt.Sprintf("%dKiB", size>>10)
		if size >= 1<<20 {
			label = fmt.Sprintf("%dMiB", size>>20)
		}
		b.Run("float32-sum-"+label, func(b *testing.B) {
			d, s := make([]float32, size/4), make([]float32, size/4)
			for i := range s {
				s[i] = 0x1p-20
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				Combine(d, s, Sum)
			}
		})
		b.Run("float64-sum-"+label, func(b *testing.B) {
			d, s := make([]float64, size/8), make([]float64, size/8)
			for i := range s {
				s[i] = 0x1p-20
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				Combine(d, s, Sum)
			}
		})
		b.Run("bfloat16-sum-"+label, func(b *testing.B) {
			d, s := make([]uint16, size/2), make([]uint16, size/2)
			for i := range s {
				d[i], s[i] = F32ToBF16(float32(i%1000)), F32ToBF16(0.5)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				Combine16(BFloat16, d, s, Sum)
			}
		})
	}
}
