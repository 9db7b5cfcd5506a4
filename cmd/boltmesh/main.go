package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands maps subcommand names to their entry points.
var commands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"bench":   cmdBench,
	"rank":    cmdRank,
	"profile": cmdProfile,
	"keygen":  cmdKeygen,
	"train":   cmdTrain,
	"soak":    cmdSoak,
	"cores":   cmdCores,
}

const usage = `boltmesh: zero-copy transport engine tools

Usage:
  boltmesh bench [flags]          benchmark boltmesh against the stdnet baseline
  boltmesh rank [flags]           join a mesh as a participant (ranks 1..n-1 on other hosts)
  boltmesh train [flags]          data-parallel MNIST training over boltmesh's allreduce
  boltmesh soak [flags]           many ranks in an allreduce and barrier loop: setup time, fds, threads, RSS
  boltmesh cores [flags]          the allreduce beside OpenMPI's at 2..16 local ranks, p50 and p99, one sitting
  boltmesh profile [flags] FILE   where a CPU profile's time went
  boltmesh keygen FILE            write a new mesh key (for --key-file) to FILE, mode 0600

Run "boltmesh COMMAND --help" for a command's flags.
`

// run dispatches to a subcommand and returns the exit status: 0, 1 for a
// failure, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "boltmesh: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "boltmesh %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(stderr, "boltmesh %s: %v\n", args[0], err)
	return 1
}

// parseFlags parses args with fs, allowing flags after positional
// arguments (boltmesh profile FILE --http :8080), and returns the
// positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v (see boltmesh %s --help)", errUsage, err, fs.Name())
		}
		if helpWanted(fs) {
			return nil, flag.ErrHelp
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
