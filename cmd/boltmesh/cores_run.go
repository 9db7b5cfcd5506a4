package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

// The implementations a sitting measures.
const (
	implBoltmesh = "boltmesh"
	implCopy     = "boltmesh-cma" // boltmesh with --single-copy-min (cores --single-copy)
	implOpenMPI  = "openmpi"
	implGloo     = "gloo"
)

// sweepAlgorithms are the allreduce algorithms cores --algorithms may
// fix (bench --algorithm), each measured as implAlgorithm's name.
var sweepAlgorithms = []string{"doubling", "halving", "ring"}

// implAlgorithm names boltmesh with its allreduce algorithm fixed.
func implAlgorithm(algo string) string { return implBoltmesh + "-" + algo }

// impls are the implementations in the order reports list them.
var impls = []string{implBoltmesh, implCopy, implAlgorithm("doubling"), implAlgorithm("halving"), implAlgorithm("ring"), implOpenMPI, implGloo}

// sample is one implementation's figures for one case in one round.
type sample struct {
	P50 float64 `json:"p50_us"`
	P99 float64 `json:"p99_us"`
}

// The operations a sitting measures.
const (
	opAllreduce = "allreduce"
	opPingpong  = "pingpong" // ranks 0 and 1's round trip
)

// caseKey names one case: an operation, a medium, a world size, a
// message size.
type caseKey struct {
	Op     string
	Medium string
	Ranks  int
	Bytes  int
}

// sitting runs the rounds and keeps what they measured.
type sitting struct {
	f      *coresFlags
	log    io.Writer
	self   string // this binary, for boltmesh's runs
	mpiBin string // the built OpenMPI allreduce anchor, or ""
	mpiPP  string // the built OpenMPI ping-pong anchor, or ""
	mpiSHM string // OpenMPI's shared-memory btl: vader, or sm
	python string // a python3 that imports torch.distributed with Gloo, or ""
	tmp    string
	got    map[caseKey]map[string][]sample
}

// newSitting finds what can run: this binary always, OpenMPI when mpicc
// builds the anchor and mpirun is on the PATH.
func newSitting(f *coresFlags, log io.Writer) (*sitting, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cores: finding this binary: %w", err)
	}
	tmp, err := os.MkdirTemp("", "boltmesh-cores-")
	if err != nil {
		return nil, err
	}
	s := &sitting{f: f, log: log, self: self, tmp: tmp, got: map[caseKey]map[string][]sample{}}
	s.mpiBin, s.mpiSHM = s.buildMPI()
	s.python = s.findGloo()
	return s, nil
}

// findGloo returns a python3 that has torch with Gloo: the one on the
// PATH, else the system's (/usr/bin/python3, where Debian's python3-torch
// goes when the PATH's is another, a pyenv's say), or "" after saying why
// not.
func (s *sitting) findGloo() string {
	if s.f.gloo == "none" {
		note(s.log, "--gloo none: Gloo is not measured")
		return ""
	}
	if _, err := os.Stat(s.f.gloo); err != nil {
		note(s.log, "Gloo's anchor: %v: Gloo is not measured", err)
		return ""
	}
	why := "python3 is not on the PATH"
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if _, err := exec.LookPath(py); err != nil {
			continue
		}
		out, err := command(time.Minute, py, "-c", "import torch.distributed as d; assert d.is_available() and d.is_gloo_available()")
		if err == nil {
			return py
		}
		why = "python3 cannot import torch with Gloo: " + lastLine(out)
	}
	note(s.log, "%s: Gloo is not measured", why)
	return ""
}

// buildMPI builds the OpenMPI anchors, or says why not and returns "".
func (s *sitting) buildMPI() (bin, shmBTL string) {
	if s.f.anchor == "none" {
		note(s.log, "--anchor none: OpenMPI is not measured")
		return "", ""
	}
	for _, tool := range []string{"mpicc", "mpirun"} {
		if _, err := exec.LookPath(tool); err != nil {
			note(s.log, "%s is not on the PATH: OpenMPI is not measured", tool)
			return "", ""
		}
	}
	src := s.f.anchor
	bin = filepath.Join(s.tmp, "mpi_allreduce")
	if out, err := exec.Command("mpicc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		note(s.log, "mpicc %s failed, OpenMPI is not measured: %v: %s", src, err, firstLine(out))
		return "", ""
	}
	if len(s.f.ppBytes) > 0 {
		pp := filepath.Join(s.tmp, "mpi_pingpong")
		if out, err := exec.Command("mpicc", "-O2", "-o", pp, s.f.ppAnchor).CombinedOutput(); err != nil {
			note(s.log, "mpicc %s failed, OpenMPI's ping-pong is not measured: %v: %s", s.f.ppAnchor, err, firstLine(out))
		} else {
			s.mpiPP = pp
		}
	}
	shmBTL = "vader"
	if out, err := exec.Command("ompi_info").Output(); err == nil && !bytes.Contains(out, []byte("btl: vader")) {
		shmBTL = "sm"
	}
	return bin, shmBTL
}

// run runs every round: in each, every medium, world size and
// implementation in turn.
func (s *sitting) run() error {
	defer os.RemoveAll(s.tmp)
	for r := 1; r <= s.f.rounds; r++ {
		for _, medium := range s.f.mediaL {
			for _, n := range s.f.worlds {
				fmt.Fprintf(s.log, "round %d/%d: %s, %d ranks\n", r, s.f.rounds, medium, n)
				if err := s.runCase(opAllreduce, medium, n, s.f.bytes, s.mpiBin); err != nil {
					return err
				}
				if medium == "tcp" && s.python != "" {
					if err := s.runGloo(n); err != nil {
						note(s.log, "Gloo at %d ranks: %v", n, err)
					}
				}
			}
			if len(s.f.ppBytes) > 0 {
				fmt.Fprintf(s.log, "round %d/%d: %s, ping-pong\n", r, s.f.rounds, medium)
				if err := s.runCase(opPingpong, medium, 2, s.f.ppBytes, s.mpiPP); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runCase runs op at n ranks over medium for every size of sizes:
// boltmesh, boltmesh-cma over shared memory with --single-copy, the
// allreduce with each algorithm of --algorithms fixed, and OpenMPI's
// anchor mpiBin if it was built.
func (s *sitting) runCase(op, medium string, n int, sizes []int, mpiBin string) error {
	if err := s.runBoltmesh(op, medium, n, sizes, "", ""); err != nil {
		return err
	}
	if medium == "shm" && s.f.singleCopy != "" {
		if err := s.runBoltmesh(op, medium, n, sizes, s.f.singleCopy, ""); err != nil {
			return err
		}
	}
	for _, algo := range s.f.algos {
		if op == opAllreduce {
			if err := s.runBoltmesh(op, medium, n, sizes, "", algo); err != nil {
				return err
			}
		}
	}
	if mpiBin != "" {
		if err := s.runMPI(op, medium, n, sizes, mpiBin); err != nil {
			note(s.log, "OpenMPI %s %s at %d ranks: %v", op, medium, n, err)
		}
	}
	return nil
}

// runBoltmesh runs op with "boltmesh bench" (suite allreduce, or p2p for
// the ping-pong) at n local ranks; with copyMin, with --single-copy-min
// copyMin, as implCopy; with algo, with --algorithm algo, as
// implAlgorithm(algo).
func (s *sitting) runBoltmesh(op, medium string, n int, sizes []int, copyMin, algo string) error {
	out := filepath.Join(s.tmp, "bench.json")
	suite := "allreduce"
	if op == opPingpong {
		suite = "p2p"
	}
	args := []string{"bench", "--ranks", strconv.Itoa(n), "--suite", suite, "--sizes", strings.Join(sizesArg(sizes), ","),
		"--baseline", "none", "--duration", s.f.duration.String(), "--json", out, "--force"}
	if medium == "tcp" {
		args = append(args, "--transport", "tcp")
	}
	impl := implBoltmesh
	if copyMin != "" {
		args, impl = append(args, "--single-copy-min", copyMin), implCopy
	}
	if algo != "" {
		args, impl = append(args, "--algorithm", algo), implAlgorithm(algo)
	}
	limit := time.Duration(2*len(sizes))*(s.f.duration+5*time.Second) + 30*time.Second
	if b, err := command(limit, s.self, args...); err != nil {
		return fmt.Errorf("cores: boltmesh bench at %d ranks over %s: %w: %s", n, medium, err, lastLine(b))
	}
	f, err := os.Open(out)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := bench.ReadReport(f)
	if err != nil {
		return err
	}
	for _, x := range rep.Results {
		if x.Impl == bench.ImplBoltmesh && x.Op == op && x.Error == "" {
			s.add(caseKey{op, medium, n, int(x.Bytes)}, impl, sample{x.P50, x.P99})
		}
	}
	return nil
}

// runMPI runs OpenMPI's anchor for op, bin, at n ranks over medium.
func (s *sitting) runMPI(op, medium string, n int, sizes []int, bin string) error {
	btl := "tcp"
	if medium == "shm" {
		btl = s.mpiSHM
	}
	args := append([]string{"--oversubscribe", "--bind-to", "none", "-np", strconv.Itoa(n),
		"--mca", "btl", btl + ",self", "--mca", "btl_tcp_if_include", "lo", bin}, sizesArg(sizes)...)
	out, err := command(2*time.Minute, "mpirun", args...)
	return s.addAnchor(out, err, op, medium, n, implOpenMPI)
}

// runGloo runs Gloo's anchor at n ranks (TCP over loopback).
func (s *sitting) runGloo(n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.python, append([]string{s.f.gloo}, sizesArg(s.f.bytes)...)...)
	cmd.Env = append(os.Environ(), "RANKS="+strconv.Itoa(n), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	return s.addAnchor(out, err, opAllreduce, "tcp", n, implGloo)
}

// addAnchor keeps what an anchor's run (its output out, its error err)
// measured of op over medium at n ranks, as impl.
func (s *sitting) addAnchor(out []byte, err error, op, medium string, n int, impl string) error {
	if err != nil {
		return fmt.Errorf("%w: %s", err, lastLine(out))
	}
	got, err := parseAnchor(out)
	if err != nil {
		return err
	}
	for b, x := range got {
		s.add(caseKey{op, medium, n, b}, impl, x)
	}
	return nil
}

func (s *sitting) add(k caseKey, impl string, x sample) {
	if s.got[k] == nil {
		s.got[k] = map[string][]sample{}
	}
	s.got[k][impl] = append(s.got[k][impl], x)
}

// parseAnchor reads an anchor's lines, "bytes p50_us algbw busbw p99_us"
// (bench/netns/mpi_allreduce.c, bench/netns/gloo_allreduce.py), skipping
// any other line (mpirun's or torch's own).
func parseAnchor(out []byte) (map[int]sample, error) {
	got := map[int]sample{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 5 {
			continue
		}
		b, err1 := strconv.Atoi(f[0])
		p50, err2 := strconv.ParseFloat(f[1], 64)
		p99, err3 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil || err3 != nil || b <= 0 || p50 <= 0 || p99 < p50 {
			continue
		}
		got[b] = sample{p50, p99}
	}
	if len(got) == 0 {
		return nil, errAnchorOutput
	}
	return got, nil
}

// command runs name with args for at most limit, as root too (mpirun
// asks), and returns its output.
func command(limit time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	return cmd.CombinedOutput()
}

func firstLine(b []byte) string {
	l, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return l
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	return s[strings.LastIndex(s, "\n")+1:]
}
