package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine/collective"
)

const benchHeader = `Usage: boltmesh bench [flags]

Benchmarks boltmesh against the stdnet baseline (the same workloads over
Go's net package; for the rpc suite, Go's net/rpc against boltmesh's rpc
agent) and prints a table per suite. Suites: p2p, msgrate (messages per
second, osu_mbw_mr), putget, barrier, allreduce, rpc (the default ones),
broadcast, and, boltmesh only, deadline (the deadline allreduce of
federated averaging, every rank in time), gather and scatter (size per
rank).

With no flags it starts 2 ranks as local processes on loopback and runs
the default suites in about a minute (local ranks each get their share of
the cores, GOMAXPROCS = cores/ranks, unless GOMAXPROCS is set), which
meet over shared memory (--transport auto; tcp for loopback TCP; the
header above the tables says which the run used). To span
machines, start every rank with --rank/--world/--peers (other hosts may
run "boltmesh rank"), or under a launcher: mpirun (OMPI_COMM_WORLD_RANK/SIZE), srun (SLURM_PROCID/NTASKS)
or torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT; ranks then meet
at rank 0's --rendezvous address (under srun by default the step's first
node, at a port derived from the job and step ids). Under torchrun, whose agent may hold a
c10d TCPStore on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True, or found
there), each rank listens on a port of its own and the ranks swap
addresses through that store instead. Rank 0 prints the results; the exit
status is 1 if any rank's data check failed.

Examples:
  boltmesh bench
  boltmesh bench --quick --json out.json
  boltmesh bench --suite p2p --transport tcp
  boltmesh bench --ranks 4 --suite allreduce --sizes 8,64K,1M,16M --plot plots
  boltmesh bench --suite rpc --sizes 8,1K,64K,1M
  mpirun -np 4 boltmesh bench --suite allreduce
  srun -N 2 -n 4 boltmesh bench --suite allreduce
  torchrun --nproc_per_node 2 --no_python boltmesh bench --suite allreduce
`

// benchFlags are bench's own flags.
type benchFlags struct {
	ranks     int
	suite     string
	sizes     string
	iters     int
	duration  time.Duration
	baseline  string
	json      string
	csv       string
	plot      string
	quick     bool
	progress  bool
	algorithm string
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.ranks, "ranks", 2, fmt.Sprintf("number of local ranks to start (without a launcher or --rank); at most %d per core", maxRanksPerCore))
	fs.StringVar(&f.suite, "suite", strings.Join(bench.DefaultSuites, ","), "suites to run, comma-separated, or all: "+strings.Join(bench.Names(), ", "))
	fs.StringVar(&f.sizes, "sizes", "", "message sizes, e.g. 8,1K,64K,1M,16M (default: each suite's)")
	fs.IntVar(&f.iters, "iters", 0, "timed iterations per case (default: as many as fit --duration)")
	fs.DurationVar(&f.duration, "duration", 0, fmt.Sprintf("target time per case (default %v, %v with --quick)", bench.DefaultDuration, bench.QuickDuration))
	fs.StringVar(&f.baseline, "baseline", bench.BaselineStdnet, "baseline: stdnet or none")
	fs.StringVar(&f.json, "json", "", "write the boltmesh-bench/v1 JSON report to `file`")
	fs.StringVar(&f.csv, "csv", "", "write the results as CSV to `file`")
	fs.StringVar(&f.plot, "plot", "", "write SVG charts to `dir`: p50 and p99 latency and bandwidth against size, per op, boltmesh beside the baseline")
	fs.BoolVar(&f.quick, "quick", false, "a few seconds: fewer sizes, short cases (for CI)")
	fs.BoolVar(&f.progress, "progress", true, "show a progress bar on stderr when it is a terminal")
	fs.StringVar(&f.algorithm, "algorithm", "auto", "boltmesh's allreduce algorithm: auto, doubling, ring, halving, onesided or star (every rank takes rank 0's)")
}

// config builds and checks the run's configuration, all but its
// Transport, which runRank fills in once the mesh has formed.
func (f *benchFlags) config() (bench.Config, error) {
	cfg := bench.Config{Baseline: f.baseline, Quick: f.quick, Algorithm: f.algorithm}
	cfg.Plan = bench.Plan{Iters: f.iters, Duration: f.duration}
	switch {
	case f.iters < 0:
		return cfg, flagErr("iters", strconv.Itoa(f.iters), "must not be negative (0: as many as fit --duration)")
	case f.duration < 0:
		return cfg, flagErr("duration", f.duration.String(), "must not be negative (0: the default)")
	case f.baseline != bench.BaselineStdnet && f.baseline != bench.BaselineNone:
		return cfg, flagErr("baseline", f.baseline, "want stdnet or none")
	}
	if _, err := collective.ParseAlgorithm(f.algorithm); err != nil {
		return cfg, flagErr("algorithm", f.algorithm, "want auto, doubling, ring, halving, onesided or star")
	}
	var err error
	if cfg.Suites, err = f.suites(); err != nil {
		return cfg, err
	}
	if f.sizes != "" {
		if cfg.Sizes, err = f.parseSizes(); err != nil {
			return cfg, err
		}
	}
	for _, o := range []struct{ flag, file string }{{"json", f.json}, {"csv", f.csv}} {
		if err := checkOutFile(o.flag, o.file); err != nil {
			return cfg, err
		}
	}
	return cfg, checkOutDir("plot", f.plot)
}

// suites parses --suite: "all", or known suites, each once.
func (f *benchFlags) suites() ([]string, error) {
	if f.suite == "all" {
		return bench.Names(), nil
	}
	list := splitList(f.suite)
	if len(list) == 0 {
		return nil, flagErr("suite", f.suite, "names no suite; want some of %s, or all", strings.Join(bench.Names(), ", "))
	}
	for i, s := range list {
		switch {
		case bench.Lookup(s) == nil:
			return nil, flagErr("suite", f.suite, "unknown suite %q (have %s)", s, strings.Join(bench.Names(), ", "))
		case slices.Contains(list[:i], s):
			return nil, flagErr("suite", f.suite, "names %s twice", s)
		}
	}
	return list, nil
}

// parseSizes parses --sizes: sizes of at least one byte.
func (f *benchFlags) parseSizes() ([]int, error) {
	sizes, err := bench.ParseSizes(f.sizes)
	if err != nil {
		return nil, flagErr("sizes", f.sizes, "%v", strings.TrimPrefix(err.Error(), "bench: "))
	}
	if slices.Contains(sizes, 0) {
		return nil, flagErr("sizes", f.sizes, "a size of 0 bytes; sizes start at 1")
	}
	return sizes, nil
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	b, err := parseBench(args, stdout, stderr)
	if err != nil {
		return err
	}
	return b.run()
}

// parseBench parses and checks bench's command line; nothing starts
// until its run.
func parseBench(args []string, stdout, stderr io.Writer) (*benchRun, error) {
	fs := newFlagSet("bench", benchHeader, stdout)
	var mf meshFlags
	var pf profFlags
	var bf benchFlags
	if err := parseMesh(fs, &mf, &pf, bf.register, args, stderr); err != nil {
		return nil, err
	}
	cfg, err := bf.config()
	if err != nil {
		return nil, err
	}
	m, launched, err := worldOf(&mf, fs, bf.ranks, 1)
	if err != nil {
		return nil, err
	}
	explicitHeap := visited(fs, "heap")
	if !explicitHeap {
		mf.heap = strconv.Itoa(heapFor(cfg))
	}
	opts, err := engineOptions(&mf, m)
	if err != nil {
		return nil, err
	}
	if err := checkHeap(&mf, int(opts.HeapSize), cfg, explicitHeap); err != nil {
		return nil, err
	}
	load := capacity{ranks: 1, heap: int(opts.HeapSize), size: maxSize(cfg), heapGiven: explicitHeap, sizesGiven: bf.sizes != ""}
	if !launched {
		load.ranks, load.local = m.world, true
	}
	if err := load.check(thisMachine(), &mf, &bf); err != nil {
		return nil, err
	}
	return &benchRun{mf: &mf, pf: &pf, bf: &bf, opts: opts, cfg: cfg, m: m, stdout: stdout, stderr: stderr}, nil
}

// worldOf is membershipOf, or, when neither the flags nor a launcher
// place this process, rank 0 of a local run of ranks ranks (at least
// least); a --ranks that contradicts a launch is refused, and the ports
// the membership names are checked (checkPorts).
func worldOf(mf *meshFlags, fs *flag.FlagSet, ranks, least int) (membership, bool, error) {
	m, launched, err := membershipOf(mf, fs)
	switch {
	case err != nil:
		return m, false, err
	case !launched && ranks < least:
		return m, false, flagErr("ranks", strconv.Itoa(ranks), "need at least %d", least)
	case !launched:
		m = membership{rank: 0, world: ranks, source: "local"}
	case visited(fs, "ranks") && ranks != m.world:
		return m, false, flagErr("ranks", strconv.Itoa(ranks), "the %s launch has %d ranks", m.source, m.world)
	}
	return m, launched, checkPorts(mf, m)
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
		h = max(h, s+heapRoom)
	}
	return h
}

// heapRoom is what a heap holds beyond the largest putget region.
const heapRoom = 1 << 20

// maxSize is the largest message size any suite of cfg runs.
func maxSize(cfg bench.Config) int {
	n := 0
	for _, s := range cfg.Suites {
		for _, size := range cfg.SizesOf(s) {
			n = max(n, size)
		}
	}
	return n
}

// checkHeap checks that an explicit --heap holds the putget suite's
// largest region.
func checkHeap(mf *meshFlags, heap int, cfg bench.Config, explicit bool) error {
	if !explicit || !slices.Contains(cfg.Suites, "putget") {
		return nil
	}
	need := 0
	for _, size := range cfg.SizesOf("putget") {
		need = max(need, size+heapRoom)
	}
	if heap < need {
		return flagErr("heap", mf.heap, "the putget suite's %s size needs a heap of at least %s", bench.FormatSize(need-heapRoom), bench.FormatSize(need))
	}
	return nil
}
