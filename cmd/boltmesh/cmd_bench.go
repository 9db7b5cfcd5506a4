package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

const benchHeader = `Usage: boltmesh bench [flags]

Benchmarks boltmesh against the stdnet baseline (the same workloads over
Go's net package; for the rpc suite, Go's net/rpc against boltmesh's rpc
agent) and prints a table per suite. Suites: p2p, putget, barrier,
allreduce, rpc (all of them by default).

With no flags it starts 2 ranks as local processes on loopback and runs
the default suites in about a minute (local ranks each get their share of
the cores, GOMAXPROCS = cores/ranks, unless GOMAXPROCS is set). To span
machines, start every rank with --rank/--world/--peers (other hosts may
run "boltmesh rank"), or under a launcher: mpirun (OMPI_COMM_WORLD_RANK/SIZE), srun (SLURM_PROCID/NTASKS)
or torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT; ranks then meet
at rank 0's --rendezvous address. Rank 0 prints the results; the exit
status is 1 if any rank's data check failed.

Examples:
  boltmesh bench
  boltmesh bench --quick --json out.json
  boltmesh bench --ranks 4 --suite allreduce --sizes 8,64K,1M,16M --plot plots
  boltmesh bench --suite rpc --sizes 8,1K,64K,1M
  mpirun -np 4 boltmesh bench --suite allreduce
`

// benchFlags are bench's own flags.
type benchFlags struct {
	ranks    int
	suite    string
	sizes    string
	iters    int
	duration time.Duration
	baseline string
	json     string
	csv      string
	plot     string
	quick    bool
	progress bool
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.ranks, "ranks", 2, "number of local ranks to start (without a launcher or --rank)")
	fs.StringVar(&f.suite, "suite", strings.Join(bench.DefaultSuites, ","), "suites to run, comma-separated, or all: "+strings.Join(bench.Names(), ", "))
	fs.StringVar(&f.sizes, "sizes", "", "message sizes, e.g. 8,1K,64K,1M,16M (default: each suite's)")
	fs.IntVar(&f.iters, "iters", 0, "timed iterations per case (default: as many as fit --duration)")
	fs.DurationVar(&f.duration, "duration", 0, fmt.Sprintf("target time per case (default %v, %v with --quick)", bench.DefaultDuration, bench.QuickDuration))
	fs.StringVar(&f.baseline, "baseline", bench.BaselineStdnet, "baseline: stdnet or none")
	fs.StringVar(&f.json, "json", "", "write the boltmesh-bench/v1 JSON report to `file`")
	fs.StringVar(&f.csv, "csv", "", "write the results as CSV to `file`")
	fs.StringVar(&f.plot, "plot", "", "write SVG charts of latency and bandwidth against size to `dir`")
	fs.BoolVar(&f.quick, "quick", false, "a few seconds: fewer sizes, short cases (for CI)")
	fs.BoolVar(&f.progress, "progress", true, "show a progress bar on stderr when it is a terminal")
}

// config builds the run's configuration.
func (f *benchFlags) config(transport string) (bench.Config, error) {
	cfg := bench.Config{Baseline: f.baseline, Quick: f.quick, Transport: transport}
	cfg.Plan = bench.Plan{Iters: f.iters, Duration: f.duration}
	if f.iters < 0 || f.duration < 0 {
		return cfg, usageErr("--iters and --duration must not be negative")
	}
	if f.suite != "all" {
		cfg.Suites = splitList(f.suite)
	} else {
		cfg.Suites = bench.Names()
	}
	for _, s := range cfg.Suites {
		if bench.Lookup(s) == nil {
			return cfg, usageErr("--suite: unknown suite %q (have %s)", s, strings.Join(bench.Names(), ", "))
		}
	}
	if f.baseline != bench.BaselineStdnet && f.baseline != bench.BaselineNone {
		return cfg, usageErr("--baseline %q: want stdnet or none", f.baseline)
	}
	if f.sizes != "" {
		sizes, err := bench.ParseSizes(f.sizes)
		if err != nil {
			return cfg, usageErr("--sizes: %v", err)
		}
		cfg.Sizes = sizes
	}
	return cfg, nil
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", benchHeader, stdout, stderr)
	var mf meshFlags
	var pf profFlags
	var bf benchFlags
	mf.register(fs)
	pf.register(fs)
	bf.register(fs)
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	if err := checkTransport(&mf, func(s string) { fmt.Fprintln(stderr, s) }); err != nil {
		return err
	}
	cfg, err := bf.config(mf.transport)
	if err != nil {
		return err
	}
	m, launched, err := membershipOf(&mf, fs)
	if err != nil {
		return err
	}
	if !launched {
		if bf.ranks < 1 {
			return usageErr("--ranks %d: need at least 1", bf.ranks)
		}
		m = membership{rank: 0, world: bf.ranks, source: "local"}
	} else if visited(fs, "ranks") && bf.ranks != m.world {
		return usageErr("--ranks %d, but the %s launch has %d ranks", bf.ranks, m.source, m.world)
	}
	if mf.heap == "" {
		mf.heap = strconv.Itoa(heapFor(cfg))
	}
	b := &benchRun{mf: &mf, pf: &pf, bf: &bf, cfg: cfg, m: m, stdout: stdout, stderr: stderr}
	return b.run()
}

// membershipOf returns the membership from the flags or a launcher's
// environment; launched is false when neither gives one (a local run).
func membershipOf(mf *meshFlags, fs *flag.FlagSet) (membership, bool, error) {
	m, ok, err := fromFlags(mf)
	if err != nil || ok {
		return m, ok, err
	}
	m, ok, err = fromEnv(os.Getenv)
	if err != nil {
		return m, false, usageErr("%v", err)
	}
	return m, ok, nil
}

// heapFor is the symmetric heap the putget sizes need: 64 MiB, or the
// largest size plus room.
func heapFor(cfg bench.Config) int {
	h := 64 << 20
	for _, s := range cfg.Sizes {
		h = max(h, s+(1<<20))
	}
	return h
}
