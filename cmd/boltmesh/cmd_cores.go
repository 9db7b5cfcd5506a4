package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

const coresHeader = `Usage: boltmesh cores [flags]

Measures boltmesh's allreduce beside OpenMPI's and Gloo's on this
machine's cores,
in one sitting: local ranks at each --ns world size (up to the cores the
process may use), over shared memory and loopback TCP, in --rounds
interleaved rounds (each round runs every implementation at every world
size in turn). boltmesh runs as "boltmesh bench --suite allreduce";
OpenMPI runs bench/netns/mpi_allreduce.c (--anchor), built with mpicc
and started with mpirun (vader or sm for shared memory, tcp over lo),
when both are on the PATH, and the ping-pong between ranks 0 and 1
(--pingpong) beside bench/anchors/mpi_pingpong.c; Gloo runs bench/netns/gloo_allreduce.py
(--gloo) over TCP where python3 imports torch. Nothing is installed,
and what is missing is skipped with a message. --single-copy adds
boltmesh with its single copy between neighbours (boltmesh-cma);
--algorithms adds boltmesh's allreduce with each algorithm named fixed
(boltmesh-ring, ...), and a column naming the fastest boltmesh. It
prints p50 and p99 per implementation, world size and message size, and
boltmesh's ratio to OpenMPI's p50; --json
writes every round's figures, --plot charts p50 and p99 against the
world size per message size and against the message size per world
size, one line per implementation.

Examples:
  boltmesh cores
  boltmesh cores --ns 2,4,8,16 --rounds 3 --json cores.json --plot cores
  boltmesh cores --ns 4,8,16 --sizes 64K,256K,1M,4M,16M --algorithms doubling,halving,ring
`

// coresFlags are cores' flags.
type coresFlags struct {
	ns, sizes, media string
	rounds           int
	duration         time.Duration
	anchor, gloo     string
	pingpong         string
	ppAnchor         string
	singleCopy       string
	algorithms       string
	json, plot       string

	worlds  []int // ns, parsed and capped at the usable cores
	bytes   []int
	ppBytes []int // pingpong, parsed; none: no ping-pong
	mediaL  []string
	algos   []string // algorithms, parsed
}

func (f *coresFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}) {
	fs.StringVar(&f.ns, "ns", "2,4,8,16", "world sizes, comma-separated (those above the usable cores are skipped)")
	fs.StringVar(&f.sizes, "sizes", "8,1K,64K,1M,16M", "message sizes in bytes (K, M suffixes; multiples of 4)")
	fs.StringVar(&f.media, "media", "shm,tcp", "media: shm (shared memory) and tcp (loopback)")
	fs.IntVar(&f.rounds, "rounds", 2, "interleaved rounds")
	fs.DurationVar(&f.duration, "duration", time.Second, "boltmesh's time per message size and round")
	fs.StringVar(&f.anchor, "anchor", "bench/netns/mpi_allreduce.c", "OpenMPI's allreduce anchor, C `source` (none: OpenMPI is not measured)")
	fs.StringVar(&f.pingpong, "pingpong", "8,1M", "ping-pong sizes between ranks 0 and 1 (none: no ping-pong)")
	fs.StringVar(&f.ppAnchor, "pingpong-anchor", "bench/anchors/mpi_pingpong.c", "OpenMPI's ping-pong anchor, C `source`")
	fs.StringVar(&f.gloo, "gloo", "bench/netns/gloo_allreduce.py", "Gloo's allreduce anchor, Python `script` (run where python3 imports torch; none: Gloo is not measured)")
	fs.StringVar(&f.singleCopy, "single-copy", "", "also measure boltmesh over shared memory with --single-copy-min `size` (as boltmesh-cma)")
	fs.StringVar(&f.algorithms, "algorithms", "", "also measure boltmesh's allreduce with each of these algorithms fixed, comma-separated\n(doubling, halving, ring; as boltmesh-ALGORITHM)")
	fs.StringVar(&f.json, "json", "", "write the boltmesh-cores/v1 report to `file`")
	fs.StringVar(&f.plot, "plot", "", "write SVG charts to `dir`")
}

// skipped lists the world sizes of --ns that resolve left out.
func (f *coresFlags) skipped() []int {
	var out []int
	for _, s := range strings.Split(f.ns, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && !slices.Contains(f.worlds, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// resolve checks cores' flags.
func (f *coresFlags) resolve(cores int) error {
	for _, s := range strings.Split(f.ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 || n > 1024 {
			return flagErr("ns", f.ns, "want world sizes from 2, such as 2,4,8,16")
		}
		if n <= cores && !slices.Contains(f.worlds, n) {
			f.worlds = append(f.worlds, n)
		}
	}
	if len(f.worlds) == 0 {
		return flagErr("ns", f.ns, "every world size is above this process's %d usable cores", cores)
	}
	sizes, err := bench.ParseSizes(f.sizes)
	if err != nil || len(sizes) == 0 {
		return flagErr("sizes", f.sizes, "want sizes such as 8,1K,64K,1M,16M")
	}
	for _, n := range sizes {
		if n < 4 || n%4 != 0 {
			return flagErr("sizes", f.sizes, "%d is not a multiple of 4 bytes (float32)", n)
		}
	}
	f.bytes = sizes
	if f.pingpong != "none" && f.pingpong != "" {
		if f.ppBytes, err = bench.ParseSizes(f.pingpong); err != nil || len(f.ppBytes) == 0 {
			return flagErr("pingpong", f.pingpong, "want sizes such as 8,1M, or none")
		}
	}
	for _, m := range strings.Split(f.media, ",") {
		m = strings.TrimSpace(m)
		if m != "shm" && m != "tcp" {
			return flagErr("media", f.media, "want shm, tcp or both")
		}
		if !slices.Contains(f.mediaL, m) {
			f.mediaL = append(f.mediaL, m)
		}
	}
	if f.rounds < 1 {
		return flagErr("rounds", strconv.Itoa(f.rounds), "want at least 1")
	}
	if f.duration <= 0 {
		return flagErr("duration", f.duration.String(), "need a positive duration")
	}
	if f.singleCopy != "" {
		if n, err := bench.ParseSize(f.singleCopy); err != nil || n <= 0 {
			return flagErr("single-copy", f.singleCopy, "want a positive size such as 256K")
		}
	}
	if f.algorithms != "" {
		for _, a := range strings.Split(f.algorithms, ",") {
			a = strings.TrimSpace(a)
			if !slices.Contains(sweepAlgorithms, a) {
				return flagErr("algorithms", f.algorithms, "want some of %s", strings.Join(sweepAlgorithms, ", "))
			}
			if !slices.Contains(f.algos, a) {
				f.algos = append(f.algos, a)
			}
		}
	}
	if err := checkOutDir("plot", f.plot); err != nil {
		return err
	}
	return nil
}

func cmdCores(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cores", coresHeader, stdout)
	var f coresFlags
	f.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("cores takes no arguments, got %q", pos)
	}
	if err := f.resolve(runtime.NumCPU()); err != nil {
		return err
	}
	if skipped := f.skipped(); len(skipped) > 0 {
		note(stderr, "world sizes %v skipped: above this process's %d usable cores", skipped, runtime.NumCPU())
	}
	s, err := newSitting(&f, stderr)
	if err != nil {
		return err
	}
	if err := s.run(); err != nil {
		return err
	}
	rep := s.report()
	rep.writeTable(stdout)
	if f.json != "" {
		if err := writeJSONFile(f.json, rep); err != nil {
			return err
		}
	}
	if f.plot != "" {
		if err := rep.writePlots(f.plot); err != nil {
			return err
		}
	}
	return nil
}

// sizesArg is sizes as anchor arguments, in bytes.
func sizesArg(sizes []int) []string {
	out := make([]string, len(sizes))
	for i, n := range sizes {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// note says what a sitting skipped, once.
func note(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "boltmesh cores: "+format+"\n", args...)
}
