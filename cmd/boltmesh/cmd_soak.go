package main

import (
	"flag"
	"io"
	"strconv"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

const soakHeader = `Usage: boltmesh soak [flags]

Forms a mesh of many ranks and keeps it busy: every rank runs an
allreduce of --size bytes of float32 (plus one word that carries rank
0's stop) and a barrier, in a loop, for --duration, and checks every
element of every result. Rank 0 then prints the setup time (from the
launch of the ranks to the first barrier), the iterations, the allreduce
and barrier p50, and each rank's file descriptors, threads and resident
memory (now and at their peak), read from /proc.

With no flags it starts 32 ranks as local processes on this machine, as
"boltmesh bench" does (more than 8 ranks per core is refused without
--force: a soak of 32 ranks on fewer than 4 cores needs it), and takes
the same launch paths otherwise. The exit status is 1 if any rank failed
or saw a wrong result.

Examples:
  boltmesh soak --force
  boltmesh soak --ranks 16 --duration 10s --transport tcp --json soak.json
`

// soakFlags are soak's own flags.
type soakFlags struct {
	ranks    int
	duration time.Duration
	size     string
	bytes    int // size, parsed
	json     string
}

func (f *soakFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.ranks, "ranks", 32, "number of local ranks to start (ignored under a launcher)")
	fs.DurationVar(&f.duration, "duration", 30*time.Second, "how long the loop runs")
	fs.StringVar(&f.size, "size", "1K", "allreduce payload in bytes (K, M suffixes; a multiple of 4)")
	fs.StringVar(&f.json, "json", "", "write the boltmesh-soak/v1 report to `file` (rank 0)")
}

// resolve checks soak's flags.
func (f *soakFlags) resolve() error {
	n, err := parseSizeFlag("size", f.size, "1K")
	if err != nil {
		return err
	}
	if n < 4 || n%4 != 0 || n > 64<<20 {
		return flagErr("size", f.size, "need a multiple of 4 bytes from 4 B to 64 MiB")
	}
	f.bytes = n
	if f.duration <= 0 {
		return flagErr("duration", f.duration.String(), "need a positive duration")
	}
	return nil
}

// childArgs are the soak flags the other local ranks get.
func (f *soakFlags) childArgs() []string {
	return []string{"soak", "--size", strconv.Itoa(f.bytes), "--duration", f.duration.String()}
}

// soakRun is one rank's part in a soak command.
type soakRun struct {
	mf     *meshFlags
	pf     *profFlags
	sf     *soakFlags
	opts   engine.Options
	m      membership
	stdout io.Writer
	stderr io.Writer
}

func cmdSoak(args []string, stdout, stderr io.Writer) error {
	r, err := parseSoak(args, stdout, stderr)
	if err != nil {
		return err
	}
	return r.run()
}

// parseSoak parses and checks soak's command line; nothing starts until
// its run.
func parseSoak(args []string, stdout, stderr io.Writer) (*soakRun, error) {
	fs := newFlagSet("soak", soakHeader, stdout)
	var mf meshFlags
	var pf profFlags
	var sf soakFlags
	if err := parseMesh(fs, &mf, &pf, sf.register, args, stderr); err != nil {
		return nil, err
	}
	if err := sf.resolve(); err != nil {
		return nil, err
	}
	m, launched, err := worldOf(&mf, fs, sf.ranks, 2)
	if err != nil {
		return nil, err
	}
	opts, err := engineOptions(&mf, m)
	if err != nil {
		return nil, err
	}
	load := capacity{ranks: 1, heap: int(opts.HeapSize), heapGiven: mf.heap != "", size: sf.bytes, sizesGiven: true}
	if !launched {
		load.ranks, load.local = m.world, true
	}
	if err := load.check(thisMachine(), &mf, nil); err != nil {
		return nil, err
	}
	return &soakRun{mf: &mf, pf: &pf, sf: &sf, opts: opts, m: m, stdout: stdout, stderr: stderr}, nil
}
