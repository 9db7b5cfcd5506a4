package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// meshFlags say how this process joins a mesh; bench and rank share them.
type meshFlags struct {
	rank, world int    // -1: not given
	peers       string // host:port,... for every rank
	rendezvous  string // rank 0's rendezvous address
	coordinator string // star topology: the coordinator's (rank 0's) address
	bind        string // this rank's listen address
	transport   string // auto, shm, tcp or thunderbolt
	keyFile     string // file holding the mesh key
	heap        string // symmetric heap size
	streams     int    // TCP data connections per pair of ranks (plus one control connection)
	stripeMin   string // size from which sends are striped
	singleCopy  string // size from which neighbours copy once, or off
	seal        string // auto, always or never (engine.Options.Seal)
	sockBuf     string // SO_SNDBUF/SO_RCVBUF
	congestion  string // TCP congestion control
	spin        time.Duration
	spinYield   time.Duration
	timeout     time.Duration
	force       bool // run beyond what this machine holds (see capacity)
}

func (f *meshFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.rank, "rank", -1, "this process's rank (with --world and one of --peers, --rendezvous or --coordinator)")
	fs.IntVar(&f.world, "world", -1, "number of ranks in the mesh")
	fs.StringVar(&f.peers, "peers", "", "every rank's `host:port`, comma-separated, in rank order")
	fs.StringVar(&f.rendezvous, "rendezvous", "", "rank 0's rendezvous `host:port`: rank 0 listens there, the others send their address and get the peer list\n(default $BOLTMESH_RENDEZVOUS, else MASTER_ADDR:MASTER_PORT, or torchrun's TCPStore there,\nunder srun the step's first node at a port from SLURM_JOB_ID and SLURM_STEP_ID, else "+defaultRendezvous+")")
	fs.StringVar(&f.coordinator, "coordinator", "", "star topology: rank 0 listens at `host:port` as the coordinator, the others dial it (only outbound connections;\nworker-to-worker traffic goes through the coordinator). In a local run, port 0 picks a free one")
	fs.StringVar(&f.bind, "bind", "", "this rank's listen `address` (default: from --peers, else 127.0.0.1:0 for a loopback rendezvous, else :0)")
	fs.StringVar(&f.transport, "transport", transportAuto, transportHelp)
	fs.StringVar(&f.keyFile, "key-file", "", "`file` holding the mesh key (every connection proves it; default $BOLTMESH_KEY,\nelse in a local run a new key of the run's own, else none)")
	fs.IntVar(&f.streams, "streams", 0, "TCP data connections per pair of ranks, each pair also having one control connection; sends from --stripe-min are split\nacross the data connections (default 1, thunderbolt 2; a star always uses one connection per worker)")
	fs.StringVar(&f.stripeMin, "stripe-min", "", "`size` from which a send is striped across --streams (default 1M)")
	fs.StringVar(&f.singleCopy, "single-copy-min", "", "`size` from which a message between ranks on this host is copied once, straight from the sender's buffer\n(Linux's process_vm_readv), or off (the default) to send every byte through the shared-memory rings; try 256K where the kernel's copy is fast")
	fs.StringVar(&f.seal, "seal", sealAuto, "which TCP links are sealed (every frame authenticated and encrypted): auto (those that leave the host,\nwhen the mesh has a key; not loopback, even between ranks given different\nBOLTMESH_HOST_IDs), always (every TCP link, loopback too; needs a key) or never")
	fs.StringVar(&f.sockBuf, "socket-buffer", "", "SO_SNDBUF and SO_RCVBUF `size` of every connection (default: the kernel's auto-tuning; thunderbolt 4M)")
	fs.StringVar(&f.congestion, "congestion", "", "TCP congestion control of every connection, e.g. cubic, reno, bbr, or system for the kernel's default\n(default "+engine.LoopbackCongestion+" on loopback, the kernel's default on other links)")
	fs.StringVar(&f.heap, "heap", "", "symmetric heap `size` per rank (default 64M, or enough for the putget sizes)")
	fs.DurationVar(&f.spin, "spin", 0, "how long a blocking receive polls before sleeping (engine.Options.Spin; negative: never; default the engine's)")
	fs.DurationVar(&f.spinYield, "spin-yield", 0, "how long a spin finds nothing before it gives its core up every 10µs (engine.Options.SpinYield; default never)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for every rank to join")
	fs.BoolVar(&f.force, "force", false, fmt.Sprintf("run even what this machine cannot hold: more than %d local ranks per core, or heaps and buffers over half its memory", maxRanksPerCore))
}

// profFlags select the profiles this process records.
type profFlags struct {
	cpu, mem, mutex, block, http string
}

func (f *profFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cpu, "cpuprofile", "", "write a CPU profile to `file` (ranks other than 0 add .rankN)")
	fs.StringVar(&f.mem, "memprofile", "", "write an allocation profile to `file`")
	fs.StringVar(&f.mutex, "mutexprofile", "", "write a mutex contention profile to `file`")
	fs.StringVar(&f.block, "blockprofile", "", "write a goroutine blocking profile to `file`")
	fs.StringVar(&f.http, "pprof", "", "serve net/http/pprof at `addr` while running")
}

// newFlagSet returns a flag set whose -h/--help prints help (a usage
// header and the flags) to stdout; it prints nothing itself on an error,
// which parseFlags returns for the caller to print as one line.
func newFlagSet(name, header string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	h := &helpFlag{print: func() {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, header)
		fmt.Fprintln(stdout, "\nFlags (-flag and --flag both work):")
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}}
	fs.Var(h, "help", "print this help")
	fs.Var(h, "h", "print this help")
	return fs
}

// helpFlag is -h and --help: set, parseFlags prints the help.
type helpFlag struct {
	print  func()
	wanted bool
}

func (h *helpFlag) String() string { return "" }

// Set implements flag.Value.
func (h *helpFlag) Set(string) error {
	h.wanted = true
	return nil
}

// IsBoolFlag makes -h take no value.
func (h *helpFlag) IsBoolFlag() bool { return true }

// helpWanted prints fs's help if -h or --help was given.
func helpWanted(fs *flag.FlagSet) bool {
	h, ok := fs.Lookup("help").Value.(*helpFlag)
	if ok && h.wanted {
		h.print()
	}
	return ok && h.wanted
}

// visited reports whether flag name was set on the command line.
func visited(fs *flag.FlagSet, name string) bool {
	seen := false
	fs.Visit(func(f *flag.Flag) { seen = seen || f.Name == name })
	return seen
}

// parseMesh registers the mesh and profiling flags on fs, then those
// more adds (nil for none), parses args, which may hold no positional
// argument, and checks the mesh and profiling flags: the part of parsing
// that bench, rank and train share.
func parseMesh(fs *flag.FlagSet, mf *meshFlags, pf *profFlags, more func(*flag.FlagSet), args []string, stderr io.Writer) error {
	mf.register(fs)
	pf.register(fs)
	if more != nil {
		more(fs)
	}
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	if err := checkTransport(mf, func(s string) { fmt.Fprintln(stderr, s) }); err != nil {
		return err
	}
	if err := mf.check(); err != nil {
		return err
	}
	return pf.check()
}
