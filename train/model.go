package train

import (
	"math"
	"math/rand/v2"
)

// Sizes of the parameter vector's parts, in the order they are stored.
const (
	sizeW1    = Inputs * Hidden
	sizeB1    = Hidden
	sizeW2    = Hidden * Classes
	sizeB2    = Classes
	NumParams = sizeW1 + sizeB1 + sizeW2 + sizeB2 // 203,530
)

// Model is the MLP's parameters in one vector, so that a gradient of the
// same layout travels in one allreduce: W1 (Inputs×Hidden, row-major),
// b1, W2 (Hidden×Classes), b2.
type Model struct {
	Params []float32
}

// NewModel returns a model initialized from seed: weights uniform in
// ±sqrt(6/fan_in) (He), biases zero. The same seed gives the same bits.
func NewModel(seed uint64) *Model {
	m := &Model{Params: make([]float32, NumParams)}
	rng := rand.New(rand.NewPCG(seed, 0x6d6c70))
	fill := func(w []float32, fanIn int) {
		a := math.Sqrt(6 / float64(fanIn))
		for i := range w {
			w[i] = float32((2*rng.Float64() - 1) * a)
		}
	}
	w1, _, w2, _ := split(m.Params)
	fill(w1, Inputs)
	fill(w2, Hidden)
	return m
}

// split returns the views of p's parts: W1, b1, W2, b2.
func split(p []float32) (w1, b1, w2, b2 []float32) {
	w1, p = p[:sizeW1], p[sizeW1:]
	b1, p = p[:sizeB1], p[sizeB1:]
	w2, p = p[:sizeW2], p[sizeW2:]
	return w1, b1, w2, p[:sizeB2]
}
