package train

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// Epoch is one epoch's record on one rank.
type Epoch struct {
	Epoch        int     `json:"epoch"`         // 1, 2, ...
	Loss         float64 `json:"loss"`          // mean training loss over the epoch's steps that this rank got a result of
	TestAccuracy float64 `json:"test_accuracy"` // fraction of the test set right after the epoch
	ComputeS     float64 `json:"compute_s"`     // seconds in forward, backward and update
	CommS        float64 `json:"comm_s"`        // seconds in the allreduces and checks
	ElapsedS     float64 `json:"elapsed_s"`     // seconds since the run began, at the epoch's end
	Steps        int     `json:"steps"`         // steps in the epoch
	Contributed  int     `json:"contributed"`   // steps whose gradient holds this rank's
	Resyncs      int     `json:"resyncs"`       // times this rank took rank 0's weights
}

// Trainer is one rank's part in a data-parallel run.
type Trainer struct {
	cfg         Config
	comm        *collective.Comm
	ownComm     bool // New made comm, and Close closes it
	rank, world int
	model       *Model
	trainSet    *Dataset
	testSet     *Dataset
	perm        []int
	shardRows   int
	shards      []shard   // this rank's shards
	grad        []float32 // NumParams, then loss sum, correct count and samples: the allreduce's payload
	check       []int64   // behind flag, weight hash, its complement
	eval        *work
	behind      bool // a deadline round went on without this rank since the last check
	start       time.Time
}

// shard is the scratch of one of this rank's shards.
type shard struct {
	index int // which piece of the global batch
	x     []float32
	y     []uint8
	g     []float32 // its gradient, when the rank has more than one shard
	w     *work
}

// tail is how many values ride in grad after the gradient.
const tail = 3

// New returns rank t.Rank()'s trainer over t, with a model from
// cfg.Seed, and a Comm of its own over t (cfg.Algorithm), which Close
// closes. Every rank must call it with the same data and Config.
func New(t collective.Transport, trainSet, testSet *Dataset, cfg Config) (*Trainer, error) {
	comm, err := collective.New(t, collective.Options{Algorithm: cfg.Algorithm})
	if err != nil {
		return nil, err
	}
	tr, err := NewOn(comm, trainSet, testSet, cfg)
	if err != nil {
		comm.Close()
		return nil, err
	}
	tr.ownComm = true
	return tr, nil
}

// NewOn is New over the caller's Comm c, whose Options apply
// (cfg.Algorithm is not used; a Deadline allreduce is rooted at c's
// Root): the trainer's calls take their turns with the caller's own on c
// and on any other Comm over its transport, so every rank must make its
// calls in the same order around the training's. Close leaves c open.
func NewOn(c *collective.Comm, trainSet, testSet *Dataset, cfg Config) (*Trainer, error) {
	world := c.WorldSize()
	cfg, err := cfg.withDefaults(world)
	if err != nil {
		return nil, err
	}
	if trainSet.Len() < cfg.Batch {
		return nil, &ConfigError{Field: "Batch", Reason: fmt.Sprintf("%d is more than the %d training samples", cfg.Batch, trainSet.Len())}
	}
	tr := &Trainer{
		cfg: cfg, comm: c, rank: c.Rank(), world: world,
		model: NewModel(cfg.Seed), trainSet: trainSet, testSet: testSet,
		perm: make([]int, trainSet.Len()), shardRows: cfg.Batch / cfg.Shards,
		grad: make([]float32, NumParams+tail), check: make([]int64, 3),
		eval: newWork(cfg.EvalBatch),
	}
	per := cfg.Shards / world
	for i := range per {
		s := shard{index: tr.rank*per + i, x: make([]float32, tr.shardRows*Inputs), y: make([]uint8, tr.shardRows), w: newWork(tr.shardRows)}
		if per > 1 {
			s.g = make([]float32, NumParams)
		}
		tr.shards = append(tr.shards, s)
	}
	return tr, nil
}

// Close releases the trainer's Comm if New made it (a Comm given to NewOn
// stays open); the transport stays open.
func (tr *Trainer) Close() {
	if tr.ownComm {
		tr.comm.Close()
	}
}

// Params returns the model's parameters (the Model layout), valid until
// the next step.
func (tr *Trainer) Params() []float32 { return tr.model.Params }

// StepsPerEpoch is the number of full global batches in the training set.
func (tr *Trainer) StepsPerEpoch() int { return tr.trainSet.Len() / tr.cfg.Batch }

// Run trains cfg.Epochs epochs, calling each (if not nil) with every
// epoch's record, and returns them all.
func (tr *Trainer) Run(each func(Epoch)) ([]Epoch, error) {
	tr.start = time.Now()
	var out []Epoch
	for e := 1; e <= tr.cfg.Epochs; e++ {
		ep, err := tr.epoch(e)
		if err != nil {
			return out, err
		}
		out = append(out, ep)
		if each != nil {
			each(ep)
		}
	}
	return out, nil
}

// epoch runs epoch e (from 1): a shuffle, the steps, a check and the
// test accuracy.
func (tr *Trainer) epoch(e int) (Epoch, error) {
	ep := Epoch{Epoch: e, Steps: tr.StepsPerEpoch()}
	rng := rand.New(rand.NewPCG(tr.cfg.Seed, uint64(e)))
	for i := range tr.perm {
		tr.perm[i] = i
	}
	rng.Shuffle(len(tr.perm), func(i, j int) { tr.perm[i], tr.perm[j] = tr.perm[j], tr.perm[i] })
	var lossSum float64
	results := 0
	for s := 0; s < ep.Steps; s++ {
		st, err := tr.step(s)
		if err != nil {
			return ep, fmt.Errorf("train: epoch %d step %d: %w", e, s, err)
		}
		if st.result {
			lossSum += st.loss
			results++
		}
		ep.ComputeS += st.compute.Seconds()
		ep.CommS += st.comm.Seconds()
		if st.contributed {
			ep.Contributed++
		}
		global := (e-1)*ep.Steps + s + 1
		if s == ep.Steps-1 || global%tr.cfg.CheckEvery == 0 {
			t0 := time.Now()
			resynced, err := tr.verify(global)
			ep.CommS += time.Since(t0).Seconds()
			if err != nil {
				return ep, err
			}
			if resynced {
				ep.Resyncs++
			}
		}
		if tr.cfg.Progress != nil {
			tr.cfg.Progress(global, tr.cfg.Epochs*ep.Steps)
		}
	}
	if results > 0 {
		ep.Loss = lossSum / float64(results)
	}
	ep.TestAccuracy = tr.eval.accuracy(tr.model.Params, tr.testSet)
	ep.ElapsedS = time.Since(tr.start).Seconds()
	return ep, nil
}
