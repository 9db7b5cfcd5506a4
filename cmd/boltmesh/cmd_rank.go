package main

import (
	"io"

	"github.com/boltmesh/boltmesh/bench"
)

const rankHeader = `Usage: boltmesh rank [flags]

Joins a mesh as rank 1..n-1 and runs whatever rank 0 ("boltmesh bench")
asks for, then exits. Give the rank's place with --rank and --world, and
either --peers (every rank's host:port) or --rendezvous (rank 0's
rendezvous address); or run it under mpirun, srun or torchrun, whose
environment gives both (under torchrun, through its agent's TCPStore on
MASTER_PORT when one holds it: see "boltmesh bench --help").

Example, two machines:
  hostB$ boltmesh rank  --rank 1 --world 2 --peers hostA:7000,hostB:7000
  hostA$ boltmesh bench --rank 0 --world 2 --peers hostA:7000,hostB:7000
`

func cmdRank(args []string, stdout, stderr io.Writer) error {
	b, err := parseRank(args, stdout, stderr)
	if err != nil {
		return err
	}
	return b.run()
}

// parseRank parses and checks rank's command line; nothing starts until
// its run.
func parseRank(args []string, stdout, stderr io.Writer) (*benchRun, error) {
	fs := newFlagSet("rank", rankHeader, stdout)
	var mf meshFlags
	var pf profFlags
	if err := parseMesh(fs, &mf, &pf, nil, args, stderr); err != nil {
		return nil, err
	}
	m, ok, err := membershipOf(&mf, fs)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, usageErr("give --rank and --world (with --peers or --rendezvous), or run under a launcher")
	case m.rank == 0:
		return nil, usageErr("rank 0 runs \"boltmesh bench\", which drives the other ranks")
	}
	if err := checkPorts(&mf, m); err != nil {
		return nil, err
	}
	opts, err := engineOptions(&mf, m)
	if err != nil {
		return nil, err
	}
	load := capacity{ranks: 1, heap: int(opts.HeapSize), heapGiven: true}
	if err := load.check(thisMachine(), &mf, nil); err != nil {
		return nil, err
	}
	return &benchRun{mf: &mf, pf: &pf, opts: opts, cfg: bench.Config{}, m: m, stdout: stdout, stderr: stderr}, nil
}
