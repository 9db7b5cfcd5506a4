package train

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// work is one shard's scratch: activations and their gradients for up to
// rows samples. It is reused every step.
type work struct {
	rows int
	h    []float32 // rows×Hidden: ReLU(X·W1 + b1)
	z    []float32 // rows×Classes: logits, then softmax, then dLoss/dz
	dh   []float32 // rows×Hidden
}

func newWork(rows int) *work {
	return &work{rows: rows, h: make([]float32, rows*Hidden), z: make([]float32, rows*Classes), dh: make([]float32, rows*Hidden)}
}

// mat views data as a rows×cols row-major matrix.
func mat(rows, cols int, data []float32) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// forward computes the logits of x's rows into w.z (and w.h).
func (w *work) forward(params, x []float32, rows int) {
	w1, b1, w2, b2 := split(params)
	h, z := w.h[:rows*Hidden], w.z[:rows*Classes]
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, mat(rows, Inputs, x), mat(Inputs, Hidden, w1), 0, mat(rows, Hidden, h))
	for i := 0; i < rows; i++ {
		row := h[i*Hidden : (i+1)*Hidden]
		for j, b := range b1 {
			row[j] = max(row[j]+b, 0)
		}
	}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, mat(rows, Hidden, h), mat(Hidden, Classes, w2), 0, mat(rows, Classes, z))
	for i := 0; i < rows; i++ {
		row := z[i*Classes : (i+1)*Classes]
		for j, b := range b2 {
			row[j] += b
		}
	}
}

// gradient computes the gradient of the summed loss over x's rows into g
// (the Params layout, overwritten) and returns the summed loss and the
// number of rows predicted right.
func (w *work) gradient(params, g, x []float32, y []uint8) (loss float64, correct int) {
	rows := len(y)
	w.forward(params, x, rows)
	h, z, dh := w.h[:rows*Hidden], w.z[:rows*Classes], w.dh[:rows*Hidden]
	for i := 0; i < rows; i++ {
		l, ok := softmaxGrad(z[i*Classes:(i+1)*Classes], int(y[i]))
		loss += l
		if ok {
			correct++
		}
	}
	_, _, w2, _ := split(params)
	gw1, gb1, gw2, gb2 := split(g)
	// dW2 = Hᵀ·dZ, db2 = Σ dZ, dH = dZ·W2ᵀ masked by ReLU.
	blas32.Gemm(blas.Trans, blas.NoTrans, 1, mat(rows, Hidden, h), mat(rows, Classes, z), 0, mat(Hidden, Classes, gw2))
	colSum(gb2, z, rows, Classes)
	blas32.Gemm(blas.NoTrans, blas.Trans, 1, mat(rows, Classes, z), mat(Hidden, Classes, w2), 0, mat(rows, Hidden, dh))
	for i, v := range h {
		if v <= 0 {
			dh[i] = 0
		}
	}
	// dW1 = Xᵀ·dH, db1 = Σ dH.
	blas32.Gemm(blas.Trans, blas.NoTrans, 1, mat(rows, Inputs, x), mat(rows, Hidden, dh), 0, mat(Inputs, Hidden, gw1))
	colSum(gb1, dh, rows, Hidden)
	return loss, correct
}

// softmaxGrad turns logits z into dLoss/dz = softmax(z) - onehot(label)
// in place, returning the cross-entropy loss and whether the largest
// logit was the label's.
func softmaxGrad(z []float32, label int) (float64, bool) {
	best := 0
	for j, v := range z {
		if v > z[best] {
			best = j
		}
	}
	top := z[best]
	var sum float32
	for j, v := range z {
		e := float32(math.Exp(float64(v - top)))
		z[j] = e
		sum += e
	}
	loss := -math.Log(float64(z[label] / sum))
	inv := 1 / sum
	for j := range z {
		z[j] *= inv
	}
	z[label] -= 1
	return loss, best == label
}

// colSum sets dst to the column sums of the rows×cols matrix m.
func colSum(dst, m []float32, rows, cols int) {
	clear(dst)
	for i := 0; i < rows; i++ {
		for j, v := range m[i*cols : (i+1)*cols] {
			dst[j] += v
		}
	}
}

// accuracy is the fraction of d's rows predicted right, w.rows at a time.
func (w *work) accuracy(params []float32, d *Dataset) float64 {
	if d.Len() == 0 {
		return 0
	}
	correct := 0
	for lo := 0; lo < d.Len(); lo += w.rows {
		rows := min(w.rows, d.Len()-lo)
		w.forward(params, d.X[lo*Inputs:(lo+rows)*Inputs], rows)
		for i := 0; i < rows; i++ {
			row := w.z[i*Classes : (i+1)*Classes]
			best := 0
			for j, v := range row {
				if v > row[best] {
					best = j
				}
			}
			if best == int(d.Y[lo+i]) {
				correct++
			}
		}
	}
	return float64(correct) / float64(d.Len())
}
