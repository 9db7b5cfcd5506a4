package train

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// loopGemmNN is the simple loop BenchmarkGemm weighs gonum against:
// c = a·b for row-major a (m×k), b (k×n), in i-k-j order.
func loopGemmNN(m, k, n int, a, b, c []float32) {
	clear(c[:m*n])
	for i := 0; i < m; i++ {
		ci := c[i*n : (i+1)*n]
		for p := 0; p < k; p++ {
			av := a[i*k+p]
			bp := b[p*n : (p+1)*n]
			for j, bv := range bp {
				ci[j] += av * bv
			}
		}
	}
}

// loopGemmTN is c = aᵀ·b for a (k×m), b (k×n): the weight gradients.
func loopGemmTN(m, k, n int, a, b, c []float32) {
	clear(c[:m*n])
	for p := 0; p < k; p++ {
		bp := b[p*n : (p+1)*n]
		for i := 0; i < m; i++ {
			av := a[p*m+i]
			ci := c[i*n : (i+1)*n]
			for j, bv := range bp {
				ci[j] += av * bv
			}
		}
	}
}

// BenchmarkGemm weighs gonum's blas32 against the simple loops on the
// layer-1 products of a shard of 32 and 64 rows: forward X·W1
// (rows×784 · 784×256) and backward Xᵀ·dH (784×rows · rows×256).
func BenchmarkGemm(b *testing.B) {
	for _, rows := range []int{32, 64} {
		x := make([]float32, rows*Inputs)
		w := make([]float32, Inputs*Hidden)
		h := make([]float32, rows*Hidden)
		g := make([]float32, Inputs*Hidden)
		for i := range x {
			x[i] = float32(i%7) / 7
		}
		for i := range w {
			w[i] = float32(i%5) / 5
		}
		flops := int64(2 * rows * Inputs * Hidden)
		run := func(name string, f func()) {
			b.Run(fmt.Sprintf("%s/rows=%d", name, rows), func(b *testing.B) {
				b.SetBytes(flops) // "MB/s" reads as MFLOP/s
				b.ReportAllocs()
				for b.Loop() {
					f()
				}
			})
		}
		run("forward/gonum", func() {
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, mat(rows, Inputs, x), mat(Inputs, Hidden, w), 0, mat(rows, Hidden, h))
		})
		run("forward/loop", func() { loopGemmNN(rows, Inputs, Hidden, x, w, h) })
		run("backward/gonum", func() {
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, mat(rows, Inputs, x), mat(rows, Hidden, h), 0, mat(Inputs, Hidden, g))
		})
		run("backward/loop", func() { loopGemmTN(Inputs, rows, Hidden, x, h, g) })
	}
}

// TestLoopGemmMatchesGonum keeps the benchmark honest: both compute the
// same products (to rounding).
func TestLoopGemmMatchesGonum(t *testing.T) {
	const m, k, n = 3, 5, 4
	a, bb := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i) - 4
	}
	for i := range bb {
		bb[i] = float32(i%3) + 0.5
	}
	c1, c2 := make([]float32, m*n), make([]float32, m*n)
	loopGemmNN(m, k, n, a, bb, c1)
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, mat(m, k, a), mat(k, n, bb), 0, mat(m, n, c2))
	for i := range c1 {
		if c1[i] != c2[i] {
			t.Fatalf("NN [%d]: loop %v, gonum %v", i, c1[i], c2[i])
		}
	}
	at := make([]float32, k*m) // a transposed, k×m
	for i := 0; i < m; i++ {
		for p := 0; p < k; p++ {
			at[p*m+i] = a[i*k+p]
		}
	}
	loopGemmTN(m, k, n, at, bb, c1)
	for i := range c1 {
		if c1[i] != c2[i] {
			t.Fatalf("TN [%d]: loop %v, gonum %v", i, c1[i], c2[i])
		}
	}
}
