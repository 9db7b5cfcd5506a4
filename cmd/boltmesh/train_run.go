package main

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/boltmesh/boltmesh/train"
)

// trainReport is what rank 0 writes with --json (schema
// boltmesh-train/v1): the run's settings, rank 0's epochs and every
// rank's totals.
type trainReport struct {
	Schema   string              `json:"schema"`
	Host     trainHost           `json:"host"`
	World    int                 `json:"world"`
	Batch    int                 `json:"batch"`
	LR       float64             `json:"lr"`
	Seed     uint64              `json:"seed"`
	Samples  int                 `json:"samples"`
	Deadline float64             `json:"deadline_s,omitempty"`
	Epochs   []train.Epoch       `json:"epochs"`
	Ranks    []train.RankSummary `json:"ranks"`
}

// trainHost is the machine a report was made on.
type trainHost struct {
	OS   string `json:"os"`
	CPUs int    `json:"cpus"`
	Go   string `json:"go"`
	Time string `json:"time"`
}

// trainSchema names the --json format.
const trainSchema = "boltmesh-train/v1"

// run joins the mesh (starting the local ranks first in a local run),
// trains and, on rank 0, prints and writes the outputs.
func (r *trainRun) run() error {
	var rep *trainReport
	err := runLocal(r.mf, r.pf, r.m, r.opts.MeshKey, r.stderr, r.tf.childArgs(), func(rln net.Listener) (err error) {
		rep, err = r.runRank(rln)
		return err
	})
	if rep != nil && r.m.rank == 0 {
		err = errors.Join(err, r.output(rep))
	}
	return err
}

// runRank loads the data, joins the mesh, trains and gathers every rank's
// totals.
func (r *trainRun) runRank(rln net.Listener) (*trainReport, error) {
	trainSet, testSet, err := train.LoadMNIST(r.tf.data)
	if err != nil {
		if rln != nil {
			rln.Close()
		}
		return nil, err
	}
	trainSet, testSet = trainSet.Head(r.tf.samples), testSet.Head(r.tf.testN)
	j, used, err := joinChecked(r.mf, r.m, r.opts, rln)
	if err != nil {
		return nil, err
	}
	defer j.t.Close()
	cfg, err := r.tf.config(r.m.rank, r.m.world)
	if err != nil {
		return nil, err
	}
	if r.tf.progress && r.m.rank == 0 {
		if bar := newProgress(r.stderr); bar != nil {
			cfg.Progress = func(done, total int) { bar(done, total, "training") }
		}
	}
	tr, err := train.New(j.t, trainSet, testSet, cfg)
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", r.m.rank, err)
	}
	defer tr.Close()
	if r.m.rank == 0 {
		fmt.Fprintf(r.stdout, "== train · %d ranks · %d samples · batch %d · lr %g · %d steps per epoch\n",
			r.m.world, trainSet.Len(), r.tf.batch, r.tf.lr, tr.StepsPerEpoch())
		fmt.Fprintln(r.stdout, used.line())
	}
	eps, err := tr.Run(func(ep train.Epoch) {
		if r.m.rank == 0 {
			printEpoch(r.stdout, ep)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", r.m.rank, err)
	}
	ranks, err := tr.Summaries(eps)
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", r.m.rank, err)
	}
	return &trainReport{
		Schema: trainSchema, World: r.m.world, Batch: r.tf.batch, LR: r.tf.lr, Seed: r.tf.seed,
		Samples: trainSet.Len(), Deadline: r.tf.deadline.Seconds(), Epochs: eps, Ranks: ranks,
		Host: trainHost{OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version(), Time: time.Now().UTC().Format(time.RFC3339)},
	}, nil
}
