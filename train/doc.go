// Package train is data-parallel training of a small MLP on MNIST over a
// collective.Comm: the loop boltmesh's allreduce is made for.
//
// The model is 784-256-10 in float32 (ReLU, softmax cross-entropy), trained
// with plain SGD at a fixed learning rate from a deterministic
// initialization (Config.Seed). Every rank walks the same shuffled order of
// the training set; each global batch of Config.Batch samples is cut into
// Config.Shards equal shards, each rank computes the gradient of its own
// shards, and the ranks sum the gradients (one AllReduce per step, with
// the loss and the count of correct predictions riding along) and apply
// the same update, so every rank holds bit-identical weights. Every
// Config.CheckEvery steps the ranks compare a hash of their weights (one
// AllReduce Max over the hash and its complement) and fail with
// ErrDiverged if they differ.
//
// See Example for one rank's part and examples/train for a whole run.
//
// Because a rank sums its shards' gradients in the order the allreduce
// would (pairwise, by shard), one rank training with Shards = 2 computes
// the very bits that two ranks compute: see TestOneRankMatchesTwo.
//
// With Config.Deadline set, each step uses collective.AllReduceDeadline
// instead: a rank that misses the deadline is left out of that step's
// gradient; one that falls a whole round behind (collective.ErrBehind)
// takes the root's weights at the next check.
package train
