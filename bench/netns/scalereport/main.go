// Command scalereport is scale-bench.sh's helper: it turns a size list
// into bytes for OpenMPI's allreduce, a tc rate into bytes a second, and
// gathers the runs of every world
// size (boltmesh's bench reports, OpenMPI's figures, the link rate and the
// CPU use) into one boltmesh-scale/v1 JSON document, a table per world
// size, and SVG charts against the world size.
//
//	scalereport sizes 8,64K,1M,16M
//	scalereport rate-bytes 400mbit
//	scalereport report --run hosts=N,[per_host=K,placement=P,]rate=R,cpu=P,cpu_bcast=P,cpu_mpi=P,boltmesh=FILE,...,openmpi=FILE ... [--json FILE] [--plot DIR]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scalereport:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: scalereport sizes LIST | report --run ... [--json FILE] [--plot DIR]")
	}
	switch args[0] {
	case "sizes":
		if len(args) != 2 {
			return errors.New("usage: scalereport sizes LIST")
		}
		return printSizes(out, args[1])
	case "report":
		return report(args[1:], out)
	case "rate-bytes":
		if len(args) != 2 {
			return errors.New("usage: scalereport rate-bytes RATE")
		}
		gbps, err := rateGBps(args[1])
		if err == nil {
			_, err = fmt.Fprintf(out, "%.0f\n", gbps*1e9)
		}
		return err
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// runFlags collects repeated --run values.
type runFlags []string

func (r *runFlags) String() string     { return strings.Join(*r, " ") }
func (r *runFlags) Set(v string) error { *r = append(*r, v); return nil }

func report(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var runs runFlags
	fs.Var(&runs, "run", "one world size's run: hosts=N,[per_host=K,placement=together|alternate,]rate=R,cpu=P,cpu_bcast=P,cpu_mpi=P,boltmesh=FILE...,openmpi=FILE")
	jsonOut := fs.String("json", "", "write the boltmesh-scale/v1 document to `file`")
	plotDir := fs.String("plot", "", "write SVG charts against the world size to `dir`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(runs) == 0 {
		return errors.New("report: no --run")
	}
	doc, err := gather(runs)
	if err != nil {
		return err
	}
	writeTables(out, doc)
	if *jsonOut != "" {
		if err := writeJSONFile(*jsonOut, doc); err != nil {
			return err
		}
	}
	if *plotDir != "" {
		if err := writePlots(*plotDir, doc); err != nil {
			return err
		}
	}
	return nil
}
