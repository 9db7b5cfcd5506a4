package train

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// smallConfig is a CI-sized run: 2 epochs over a 2,048-sample subset.
func smallConfig() Config {
	return Config{Epochs: 2, Batch: 64, LR: 0.1, Seed: 7, Shards: 2, CheckEvery: 8}
}

// runRanks trains on an n-rank loopback mesh, one goroutine per rank, and
// returns each rank's epochs and final weights.
func runRanks(t *testing.T, n int, cfg Config, trainN, testN int) ([][]Epoch, [][]float32) {
	t.Helper()
	var ts []collective.Transport
	for _, tr := range meshtest.Mesh(t, n, engine.Options{}) {
		ts = append(ts, tr)
	}
	return runOver(t, ts, cfg, trainN, testN)
}

// runOver is runRanks over the transports ts, one per rank.
func runOver(t *testing.T, ts []collective.Transport, cfg Config, trainN, testN int) ([][]Epoch, [][]float32) {
	t.Helper()
	n := len(ts)
	trainSet, testSet := loadMNIST(t)
	trainSet, testSet = trainSet.Head(trainN), testSet.Head(testN)
	eps := make([][]Epoch, n)
	params := make([][]float32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := New(ts[r], trainSet, testSet, cfg)
			if err != nil {
				errs[r] = err
				return
			}
			defer tr.Close()
			eps[r], errs[r] = tr.Run(nil)
			params[r] = slices.Clone(tr.Params())
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return eps, params
}

// TestOneRankMatchesTwo: with the same seed, global batch and shards, one
// rank and two ranks end with the same weights, bit for bit, and so the
// same accuracy; and the model learns.
func TestOneRankMatchesTwo(t *testing.T) {
	cfg := smallConfig()
	one, p1 := runRanks(t, 1, cfg, 2048, 1000)
	two, p2 := runRanks(t, 2, cfg, 2048, 1000)
	if !slices.Equal(p2[0], p2[1]) {
		t.Fatal("the two ranks' weights differ")
	}
	if i := firstDiff(p1[0], p2[0]); i >= 0 {
		t.Errorf("1 rank and 2 ranks differ first at parameter %d: %v vs %v", i, p1[0][i], p2[0][i])
	}
	a1, a2 := one[0][1].TestAccuracy, two[0][1].TestAccuracy
	t.Logf("test accuracy after 2 epochs: 1 rank %.4f, 2 ranks %.4f (%.4f)", a1, a2, two[1][1].TestAccuracy)
	if math.Abs(a1-a2) > 0.005 {
		t.Errorf("accuracy: 1 rank %.4f, 2 ranks %.4f: more than 0.5 points apart", a1, a2)
	}
	if a1 < 0.8 {
		t.Errorf("accuracy %.4f after 2 epochs: the model did not learn", a1)
	}
	if two[0][1].Contributed != two[0][1].Steps {
		t.Errorf("rank 0 contributed to %d of %d steps", two[0][1].Contributed, two[0][1].Steps)
	}
}

// TestOneRankMatchesFour: with recursive doubling, whose order is the
// pairwise tree a rank sums its shards in, 4 ranks compute the bits of 1
// rank and of 2 ranks with the same 4 shards.
func TestOneRankMatchesFour(t *testing.T) {
	cfg := smallConfig()
	cfg.Epochs, cfg.Shards, cfg.Algorithm = 1, 4, collective.AlgorithmDoubling
	_, p1 := runRanks(t, 1, cfg, 512, 10)
	_, p2 := runRanks(t, 2, cfg, 512, 10)
	_, p4 := runRanks(t, 4, cfg, 512, 10)
	if i := firstDiff(p1[0], p4[0]); i >= 0 {
		t.Errorf("1 rank and 4 ranks differ first at parameter %d", i)
	}
	if i := firstDiff(p1[0], p2[0]); i >= 0 {
		t.Errorf("1 rank and 2 ranks differ first at parameter %d", i)
	}
}

// TestShardsOfOneRank: one rank summing its shards in another order (one
// shard, not two) learns as well but not bit-identically, which shows
// that the pairwise order is what makes TestOneRankMatchesTwo's bits
// match.
func TestShardsOfOneRank(t *testing.T) {
	cfg := smallConfig()
	cfg.Epochs = 1
	_, p2 := runRanks(t, 1, cfg, 1024, 100)
	cfg.Shards = 1
	_, p1 := runRanks(t, 1, cfg, 1024, 100)
	if firstDiff(p1[0], p2[0]) < 0 {
		t.Error("one shard and two shards gave the same bits: the test cannot tell orders apart")
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestDivergedFails: a rank whose weights differ makes every rank's check
// fail with a *DivergedError.
func TestDivergedFails(t *testing.T) {
	trainSet, testSet := loadMNIST(t)
	ts := meshtest.Mesh(t, 2, engine.Options{})
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := New(ts[r], trainSet.Head(256), testSet.Head(10), Config{Batch: 64})
			if err != nil {
				errs[r] = err
				return
			}
			defer tr.Close()
			if r == 1 {
				tr.Params()[5] += 1
			}
			_, errs[r] = tr.verify(0)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		var de *DivergedError
		if !errors.As(err, &de) || !errors.Is(err, ErrDiverged) {
			t.Errorf("rank %d: %v, want a *DivergedError", r, err)
		}
	}
}

// TestConfigErrors: bad fields fail with a *ConfigError naming them.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Batch: 63, Shards: 2}, "Batch"},
		{Config{Shards: 3}, "Shards"},
		{Config{LR: -1}, "LR"},
		{Config{Epochs: -1}, "Epochs"},
	} {
		_, err := c.cfg.withDefaults(2)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want a ConfigError on %s", c.cfg, err, c.field)
		}
	}
}

// TestThunderbolt: New takes an *thunderbolt.Transport, and two
// ranks over it end with the same weights, bit for bit.
func TestThunderbolt(t *testing.T) {
	cfg := smallConfig()
	cfg.Epochs = 1
	var ts []collective.Transport
	for _, tt := range meshtest.Thunderbolt(t, 2, engine.Options{}) {
		ts = append(ts, tt)
	}
	_, params := runOver(t, ts, cfg, 512, 256)
	if !slices.Equal(params[0], params[1]) {
		t.Fatal("the two ranks' weights differ")
	}
}
