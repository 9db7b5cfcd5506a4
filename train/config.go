package train

import (
	"fmt"
	"time"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// Config is one training run's settings. The zero value selects every
// default; every rank must use the same Config, except Straggle.
type Config struct {
	// Epochs is the number of passes over the training set. Default 1.
	Epochs int
	// Batch is the global batch: the samples of one step, across all
	// ranks. Default 64. It must be a multiple of Shards.
	Batch int
	// LR is SGD's learning rate, fixed. Default 0.1.
	LR float32
	// Seed fixes the initial weights and the shuffled order of every
	// epoch; every value is a seed, 0 included. Default 0.
	Seed uint64
	// Shards is the number of pieces each global batch is cut into, and
	// so the reduction order of its gradient: each rank takes Shards/world
	// consecutive pieces and sums their gradients pairwise. Default: the
	// world size. It must be a multiple of the world size. Runs with the
	// same Shards compute the same bits at world sizes 1 and 2, and at
	// every power-of-two world size that divides a power-of-two Shards
	// when Algorithm is collective.AlgorithmDoubling (whose order is the
	// same pairwise tree; the ring's is not).
	Shards int
	// Algorithm is the gradient allreduce's algorithm
	// (collective.Options.Algorithm). Default collective.AlgorithmAuto.
	Algorithm collective.Algorithm
	// CheckEvery is the number of steps between checks that every rank
	// holds the same weights; the last step of each epoch is always
	// checked. Default 100.
	CheckEvery int
	// Deadline, if not zero, bounds each step's allreduce: a rank whose
	// gradient misses it is left out of that step (AllReduceDeadline,
	// rooted at rank 0). Default 0: every rank waits for every other.
	Deadline time.Duration
	// Straggle makes this rank sleep so long before each step's
	// allreduce, to simulate a slow rank. Default 0.
	Straggle time.Duration
	// EvalBatch is how many test samples are evaluated at a time.
	// Default 1000.
	EvalBatch int
	// Progress, if not nil, is called after every step with the steps
	// done and the run's total.
	Progress func(done, total int)
}

// withDefaults returns c with its defaults filled in and checked for a
// world of n ranks.
func (c Config) withDefaults(n int) (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Epochs, 1)
	def(&c.Batch, 64)
	def(&c.Shards, n)
	def(&c.CheckEvery, 100)
	def(&c.EvalBatch, 1000)
	if c.LR == 0 {
		c.LR = 0.1
	}
	bad := func(field, format string, a ...any) (Config, error) {
		return c, &ConfigError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case c.Epochs < 0:
		return bad("Epochs", "%d is negative", c.Epochs)
	case c.Shards < 0 || c.Shards%n != 0:
		return bad("Shards", "%d is not a multiple of the world size %d", c.Shards, n)
	case c.Batch < 0 || c.Batch%c.Shards != 0:
		return bad("Batch", "%d is not a multiple of the %d shards", c.Batch, c.Shards)
	case c.CheckEvery < 0:
		return bad("CheckEvery", "%d is negative", c.CheckEvery)
	case c.EvalBatch < 0:
		return bad("EvalBatch", "%d is negative", c.EvalBatch)
	case !(c.LR > 0):
		return bad("LR", "%v is not positive", c.LR)
	case c.Deadline < 0:
		return bad("Deadline", "%v is negative", c.Deadline)
	case c.Straggle < 0:
		return bad("Straggle", "%v is negative", c.Straggle)
	case n > 64 && c.Deadline > 0:
		return bad("Deadline", "a deadline allreduce takes at most 64 ranks, not %d", n)
	}
	return c, nil
}
