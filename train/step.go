package train

import (
	"errors"
	"time"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// stepStats is what one step measured.
type stepStats struct {
	loss          float64 // mean loss of the step's contributing samples
	compute, comm time.Duration
	contributed   bool
	result        bool // false: the round went on without this rank (ErrBehind)
}

// step runs step s of the current epoch: this rank's shards' gradients,
// the allreduce, the update.
func (tr *Trainer) step(s int) (stepStats, error) {
	var st stepStats
	t0 := time.Now()
	tr.localGradient(s)
	if tr.cfg.Straggle > 0 {
		time.Sleep(tr.cfg.Straggle)
	}
	t1 := time.Now()
	contrib, err := tr.allReduce()
	t2 := time.Now()
	st.comm = t2.Sub(t1)
	switch {
	case errors.Is(err, collective.ErrBehind):
		tr.behind = true // no result this round: rank 0's weights at the next check
		st.compute = t1.Sub(t0)
		return st, nil
	case err != nil:
		return st, err
	}
	st.contributed, st.result = contrib, true
	n := tr.grad[NumParams+2]
	st.loss = float64(tr.grad[NumParams]) / float64(n)
	tr.update(1 / n)
	st.compute = t1.Sub(t0) + time.Since(t2)
	return st, nil
}

// localGradient fills tr.grad with the sum of this rank's shards'
// gradients for step s (pairwise, in shard order, as the allreduce adds
// the ranks'), the summed loss, the correct count and the sample count.
func (tr *Trainer) localGradient(s int) {
	base := s * tr.cfg.Batch
	var loss float64
	correct := 0
	for i := range tr.shards {
		sh := &tr.shards[i]
		idx := tr.perm[base+sh.index*tr.shardRows : base+(sh.index+1)*tr.shardRows]
		for r, j := range idx {
			copy(sh.x[r*Inputs:(r+1)*Inputs], tr.trainSet.X[j*Inputs:(j+1)*Inputs])
			sh.y[r] = tr.trainSet.Y[j]
		}
		g := sh.g
		if g == nil {
			g = tr.grad[:NumParams]
		}
		l, c := sh.w.gradient(tr.model.Params, g, sh.x, sh.y)
		loss += l
		correct += c
	}
	if len(tr.shards) > 1 {
		pairwiseSum(tr.grad[:NumParams], tr.shards)
	}
	tr.grad[NumParams] = float32(loss)
	tr.grad[NumParams+1] = float32(correct)
	tr.grad[NumParams+2] = float32(len(tr.shards) * tr.shardRows)
}

// pairwiseSum sets dst to the sum of the shards' gradients in the order
// recursive doubling adds ranks: ((g0+g1)+(g2+g3))+... It sums in place
// in the shards' buffers.
func pairwiseSum(dst []float32, shards []shard) {
	for stride := 1; stride < len(shards); stride *= 2 {
		for i := 0; i+stride < len(shards); i += 2 * stride {
			a, b := shards[i].g, shards[i+stride].g
			for k := range a {
				a[k] += b[k]
			}
		}
	}
	copy(dst, shards[0].g)
}

// allReduce sums tr.grad across the ranks (those on time, with a
// deadline) and reports whether this rank's went in.
func (tr *Trainer) allReduce() (bool, error) {
	if tr.cfg.Deadline == 0 {
		return true, collective.AllReduce(tr.comm, tr.grad, collective.Sum)
	}
	got, err := collective.AllReduceDeadline(tr.comm, tr.grad, collective.Sum, time.Now().Add(tr.cfg.Deadline))
	return got.Has(tr.rank), err
}

// update takes one SGD step with the summed gradient scaled by scale
// (one over the samples that went into it).
func (tr *Trainer) update(scale float32) {
	lr := tr.cfg.LR * scale
	p := tr.model.Params
	for i, g := range tr.grad[:NumParams] {
		p[i] -= lr * g
	}
}
