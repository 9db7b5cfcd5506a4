package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/train"
)

const trainHeader = `Usage: boltmesh train [flags]

Trains a 784-256-10 MLP on MNIST, data-parallel: every rank takes its
shard of each global batch, the ranks sum the gradients with one
allreduce per step and apply the same SGD update, so that they hold the
same weights, bit for bit (checked every --check-every steps). Rank 0
prints, per epoch, the loss, the test accuracy and the step time split
into compute and communication, and at the end each rank's share.

With no flags it starts 2 ranks as local processes on loopback, as
"boltmesh bench" does, and takes the same launch paths: --rank/--world/
--peers, mpirun, srun, torchrun (see "boltmesh bench --help"). Every
rank must be given the same training flags. The MNIST files come from
the GoMNIST module in the Go module cache, or --data.

With --deadline, each step's allreduce waits at most that long for a
rank's gradient (AllReduceDeadline): a late rank is left out of the step;
--straggler RANK:DELAY makes one rank sleep before every allreduce.

Examples:
  boltmesh train --quick
  boltmesh train --ranks 2 --epochs 3 --json train.json --plot plots
  boltmesh train --quick --deadline 20ms --straggler 1:50ms
  mpirun -np 2 boltmesh train --quick
`

// trainFlags are train's own flags.
type trainFlags struct {
	ranks      int
	epochs     int
	batch      int
	lr         float64
	seed       uint64
	shards     int
	checkEvery int
	samples    int
	testN      int
	data       string
	deadline   time.Duration
	straggler  string
	json       string
	plot       string
	quick      bool
	progress   bool
}

// Quick runs' sizes: a subset of MNIST, 2 epochs.
const (
	quickSamples = 8192
	quickTest    = 2000
	quickEpochs  = 2
)

func (f *trainFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.ranks, "ranks", 2, fmt.Sprintf("number of local ranks to start (without a launcher or --rank); at most %d per core", maxRanksPerCore))
	fs.IntVar(&f.epochs, "epochs", 1, fmt.Sprintf("passes over the training set (%d with --quick)", quickEpochs))
	fs.IntVar(&f.batch, "batch", 64, "global batch: samples per step across all ranks")
	fs.Float64Var(&f.lr, "lr", 0.1, "SGD learning rate")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the initial weights and of every epoch's order (train.Config's default Seed is 0, not 1:\npass --seed 0 to reproduce a library run whose Config leaves Seed unset)")
	fs.IntVar(&f.shards, "shards", 0, "pieces each global batch is cut into, fixing the gradient's reduction order (default: the world size)")
	fs.IntVar(&f.checkEvery, "check-every", 100, "steps between checks that every rank holds the same weights")
	fs.IntVar(&f.samples, "samples", 0, fmt.Sprintf("train on the first `n` samples (default all 60000; %d with --quick)", quickSamples))
	fs.IntVar(&f.testN, "test-samples", 0, fmt.Sprintf("test on the first `n` samples (default all 10000; %d with --quick)", quickTest))
	fs.StringVar(&f.data, "data", "", "`dir` holding the MNIST .gz files (default $BOLTMESH_MNIST, else the GoMNIST module's data/)")
	fs.DurationVar(&f.deadline, "deadline", 0, "bound each step's allreduce: ranks later than this are left out of the step (default: wait for all)")
	fs.StringVar(&f.straggler, "straggler", "", "`RANK:DELAY`: that rank sleeps DELAY before every allreduce")
	fs.StringVar(&f.json, "json", "", "write the per-epoch records as JSON to `file`")
	fs.StringVar(&f.plot, "plot", "", "write SVG charts of loss and test accuracy against time to `dir`")
	fs.BoolVar(&f.quick, "quick", false, fmt.Sprintf("a subset (%d samples, %d epochs): seconds, for CI", quickSamples, quickEpochs))
	fs.BoolVar(&f.progress, "progress", true, "show a progress bar on stderr when it is a terminal")
}

// resolve fills in --quick's sizes where the flags were not given, and
// checks the flags.
func (f *trainFlags) resolve(fs *flag.FlagSet) error {
	if f.quick {
		for _, q := range []struct {
			name string
			v    *int
			d    int
		}{{"samples", &f.samples, quickSamples}, {"test-samples", &f.testN, quickTest}, {"epochs", &f.epochs, quickEpochs}} {
			if !visited(fs, q.name) {
				*q.v = q.d
			}
		}
	}
	switch {
	case f.epochs < 1:
		return flagErr("epochs", strconv.Itoa(f.epochs), "need at least 1")
	case f.batch < 1:
		return flagErr("batch", strconv.Itoa(f.batch), "need at least 1")
	case !(f.lr > 0):
		return flagErr("lr", strconv.FormatFloat(f.lr, 'g', -1, 64), "must be positive")
	case f.shards < 0:
		return flagErr("shards", strconv.Itoa(f.shards), "must not be negative (0: the world size)")
	case f.checkEvery < 1:
		return flagErr("check-every", strconv.Itoa(f.checkEvery), "need at least 1")
	case f.samples < 0:
		return flagErr("samples", strconv.Itoa(f.samples), "must not be negative (0: all)")
	case f.testN < 0:
		return flagErr("test-samples", strconv.Itoa(f.testN), "must not be negative (0: all)")
	case f.deadline < 0:
		return flagErr("deadline", f.deadline.String(), "must not be negative (0: none)")
	}
	if _, _, err := f.straggle(); err != nil {
		return err
	}
	if err := checkOutFile("json", f.json); err != nil {
		return err
	}
	return checkOutDir("plot", f.plot)
}

// straggle parses --straggler: the rank that sleeps (-1 for none) and how
// long.
func (f *trainFlags) straggle() (int, time.Duration, error) {
	if f.straggler == "" {
		return -1, 0, nil
	}
	rs, ds, ok := strings.Cut(f.straggler, ":")
	r, err1 := strconv.Atoi(rs)
	d, err2 := time.ParseDuration(ds)
	if !ok || err1 != nil || err2 != nil || r < 0 || d < 0 {
		return -1, 0, flagErr("straggler", f.straggler, "want RANK:DELAY, such as 1:50ms")
	}
	return r, d, nil
}

// config is rank's train.Config for a world of n ranks.
func (f *trainFlags) config(rank, n int) (train.Config, error) {
	sr, sd, _ := f.straggle()
	switch {
	case sr >= n:
		return train.Config{}, flagErr("straggler", f.straggler, "rank %d is outside the world of %d", sr, n)
	case sr == 0 && f.deadline > 0:
		return train.Config{}, flagErr("straggler", f.straggler, "rank 0 is the deadline allreduce's root, which every rank waits for; pick another")
	}
	cfg := train.Config{Epochs: f.epochs, Batch: f.batch, LR: float32(f.lr), Seed: f.seed, Shards: f.shards, CheckEvery: f.checkEvery, Deadline: f.deadline}
	if sr == rank {
		cfg.Straggle = sd
	}
	return cfg, nil
}

// childArgs are the training flags the other local ranks get, with
// --quick's sizes spelled out and the data directory found.
func (f *trainFlags) childArgs() []string {
	return []string{"train", "--epochs", strconv.Itoa(f.epochs), "--batch", strconv.Itoa(f.batch),
		"--lr", strconv.FormatFloat(f.lr, 'g', -1, 64), "--seed", strconv.FormatUint(f.seed, 10),
		"--shards", strconv.Itoa(f.shards), "--check-every", strconv.Itoa(f.checkEvery),
		"--samples", strconv.Itoa(f.samples), "--test-samples", strconv.Itoa(f.testN),
		"--data", f.data, "--deadline", f.deadline.String(), "--straggler", f.straggler, "--progress=false"}
}

// trainRun is one rank's part in a train command.
type trainRun struct {
	mf     *meshFlags
	pf     *profFlags
	tf     *trainFlags
	opts   engine.Options
	m      membership
	stdout io.Writer
	stderr io.Writer
}

func cmdTrain(args []string, stdout, stderr io.Writer) error {
	r, err := parseTrain(args, stdout, stderr)
	if err != nil {
		return err
	}
	return r.run()
}

// parseTrain parses and checks train's command line; nothing starts
// until its run.
func parseTrain(args []string, stdout, stderr io.Writer) (*trainRun, error) {
	fs := newFlagSet("train", trainHeader, stdout)
	var mf meshFlags
	var pf profFlags
	var tf trainFlags
	if err := parseMesh(fs, &mf, &pf, tf.register, args, stderr); err != nil {
		return nil, err
	}
	if err := tf.resolve(fs); err != nil {
		return nil, err
	}
	m, launched, err := worldOf(&mf, fs, tf.ranks, 1)
	if err != nil {
		return nil, err
	}
	if _, err := tf.config(m.rank, m.world); err != nil {
		return nil, err
	}
	opts, err := engineOptions(&mf, m)
	if err != nil {
		return nil, err
	}
	load := capacity{ranks: 1, heap: int(opts.HeapSize), heapGiven: true}
	if !launched {
		load.ranks, load.local = m.world, true
	}
	if err := load.check(thisMachine(), &mf, nil); err != nil {
		return nil, err
	}
	if tf.data == "" {
		if tf.data, err = train.DataDir(); err != nil {
			return nil, err
		}
	}
	return &trainRun{mf: &mf, pf: &pf, tf: &tf, opts: opts, m: m, stdout: stdout, stderr: stderr}, nil
}
