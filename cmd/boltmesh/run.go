package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
)

// benchRun is one rank's part in a bench or rank command.
type benchRun struct {
	mf     *meshFlags
	pf     *profFlags
	bf     *benchFlags    // nil for boltmesh rank
	opts   engine.Options // from mf, checked
	cfg    bench.Config
	m      membership
	used   links // how this rank reached the others, once joined
	stdout io.Writer
	stderr io.Writer
}

// childWait bounds how long rank 0 waits for the local ranks to exit.
const childWait = 30 * time.Second

// run joins the mesh (starting the local ranks first in a local run),
// runs the benchmark and, on rank 0, writes the outputs.
func (b *benchRun) run() error {
	var rep *bench.Report
	err := runLocal(b.mf, b.pf, b.m, b.opts.MeshKey, b.stderr, []string{"rank"}, func(rln net.Listener) (err error) {
		rep, err = b.runRank(rln)
		return err
	})
	if rep != nil {
		err = errors.Join(err, b.output(rep))
	}
	return err
}

// runLocal runs this rank's part, rank, under the profiles pf asks for.
// In a local run of more than one rank it first opens rank 0's listener
// (handed to rank) and starts ranks 1..n-1 as this program's command
// child (a subcommand and its own flags; the mesh flags are added), which
// get the mesh key (see childEnv), and afterwards waits for them. A rank
// placed by a launcher or the flags without a key warns first
// (warnKeyless).
func runLocal(mf *meshFlags, pf *profFlags, m membership, key []byte, stderr io.Writer, child []string, rank func(rln net.Listener) error) (err error) {
	warnKeyless(stderr, m, key)
	stop, err := startProfiling(pf, m.rank, stderr)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop()) }()
	var rln net.Listener
	var kids *children
	if m.source == "local" && m.world > 1 {
		if rln, err = listenLocal(mf); err != nil {
			return err
		}
		if testHookLocalListen != nil {
			testHookLocalListen(rln)
		}
		if kids, err = spawn(m.world, mf, pf, key, stderr, child); err != nil {
			rln.Close()
			return err
		}
		defer kids.kill()
	}
	err = rank(rln)
	if kids != nil {
		err = errors.Join(err, kids.wait(childWait))
	}
	return err
}

// testHookLocalListen, if set, is called with rank 0's listener of a
// local run once it listens, before the other ranks start.
var testHookLocalListen func(ln net.Listener)

// listenLocal opens rank 0's listener of a local run before the other
// ranks start, and points them at it: the star's coordinator listener
// with --coordinator, else the rendezvous on a free loopback port.
func listenLocal(mf *meshFlags) (net.Listener, error) {
	if mf.coordinator != "" {
		ln, err := net.Listen("tcp", mf.coordinator)
		if err != nil {
			return nil, fmt.Errorf("--coordinator: listening at %s: %w", mf.coordinator, err)
		}
		mf.coordinator = ln.Addr().String()
		return ln, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	mf.rendezvous = ln.Addr().String()
	return ln, nil
}

// runRank joins the mesh, runs the configured suites and leaves.
func (b *benchRun) runRank(rln net.Listener) (*bench.Report, error) {
	if b.mf.transport == transportThunderbolt {
		warnThunderbolt()
	}
	j, used, err := joinChecked(b.mf, b.m, b.opts, rln)
	if err != nil {
		return nil, err
	}
	defer j.t.Close()
	b.used = used
	cfg := b.cfg
	cfg.Transport = b.used.name()
	cfg.SingleCopy = b.used.singleCopy()
	cfg.Sealed = b.used.seal()
	r := &bench.Runner{T: j.t, StdnetHost: j.host(), MeshKey: b.opts.MeshKey}
	if b.bf != nil && b.bf.progress && b.m.rank == 0 {
		r.Progress = newProgress(b.stderr)
	}
	rep, err := r.Run(cfg)
	if err != nil && rep == nil {
		return nil, fmt.Errorf("rank %d: %w", b.m.rank, err)
	}
	return rep, err
}

// output prints the tables and writes the requested files.
func (b *benchRun) output(rep *bench.Report) error {
	if b.bf == nil {
		return nil
	}
	fmt.Fprintln(b.stdout, b.used.line())
	writeTables(b.stdout, rep)
	writeCongestionNote(b.stdout, rep, b.mf.congestion, len(b.used.net) > 0)
	var errs []error
	if b.bf.json != "" {
		errs = append(errs, writeFile(b.bf.json, rep.WriteJSON))
	}
	if b.bf.csv != "" {
		errs = append(errs, writeFile(b.bf.csv, func(w io.Writer) error { return writeCSV(w, rep) }))
	}
	if b.bf.plot != "" {
		errs = append(errs, writePlots(b.bf.plot, rep))
	}
	return errors.Join(errs...)
}
