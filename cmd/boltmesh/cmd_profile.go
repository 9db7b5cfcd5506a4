package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"
)

const profileHeader = `Usage: boltmesh profile [flags] FILE

Reads a CPU profile (boltmesh bench --cpuprofile FILE, go test -cpuprofile,
/debug/pprof/profile) and prints where the time went: the top functions,
the shares of system calls (read, write, epoll, kevent), memory copy,
reduction arithmetic and the Go runtime, and the share of each value of
every profile label in FILE: boltmesh bench labels its cases with op,
suite, impl and size, and the collectives label their calls with op,
algorithm and size.

With --http ADDR it serves pprof's web UI for FILE instead.
`

// profileServer is the web UI's server; tests replace it.
var profileServer func(*driver.HTTPServerArgs) error

func cmdProfile(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("profile", profileHeader, stdout)
	top := fs.Int("top", 15, "number of functions to list")
	httpAddr := fs.String("http", "", "serve pprof's web UI for FILE at `addr` (host:port)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one profile FILE, got %d arguments", len(pos))
	}
	if *top < 1 {
		return flagErr("top", strconv.Itoa(*top), "want at least 1 function")
	}
	if *httpAddr != "" {
		if _, err := parseHostPort(*httpAddr); err != nil {
			return flagErr("http", *httpAddr, "%v", err)
		}
	}
	if *httpAddr != "" {
		return serveWebUI(pos[0], *httpAddr)
	}
	p, err := readProfile(pos[0])
	if err != nil {
		return err
	}
	writeBreakdown(stdout, pos[0], analyze(p), *top)
	return nil
}

func readProfile(file string) (*profile.Profile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(p.SampleType) == 0 {
		return nil, fmt.Errorf("%s: profile has no sample types", file)
	}
	return p, nil
}

// serveWebUI runs google/pprof's web UI for file at addr until it fails.
func serveWebUI(file, addr string) error {
	fl := &driverFlags{fs: flag.NewFlagSet("pprof", flag.ContinueOnError), args: []string{"-http=" + addr, "-no_browser", file}}
	return driver.PProf(&driver.Options{Flagset: fl, HTTPServer: profileServer})
}

// writeBreakdown prints b.
func writeBreakdown(w io.Writer, file string, b *breakdown, top int) {
	fmt.Fprintf(w, "%s: %s (%s), total %s", file, b.sampleType, b.unit, b.format(b.total))
	if b.duration > 0 {
		fmt.Fprintf(w, " over %v", b.duration.Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	if b.total == 0 {
		fmt.Fprintln(w, "no samples")
		return
	}
	b.writeTop(w, top)
	b.writeShares(w)
	b.writeLabels(w)
}

func (b *breakdown) writeTop(w io.Writer, top int) {
	fmt.Fprintf(w, "\ntop %d functions by flat time:\n%10s %7s %7s  %s\n", top, "flat", "flat%", "cum%", "function")
	for _, f := range b.funcs[:min(top, len(b.funcs))] {
		fmt.Fprintf(w, "%10s %6.1f%% %6.1f%%  %s\n", b.format(f.flat), b.pct(f.flat), b.pct(f.cum), f.name)
	}
}

func (b *breakdown) writeShares(w io.Writer) {
	fmt.Fprintln(w, "\nwhere the time went:")
	for _, c := range categories {
		fmt.Fprintf(w, "  %-31s %6.1f%%", c, b.pct(b.cats[c]))
		if c == catSyscall && b.cats[c] > 0 {
			for _, k := range sysKinds {
				fmt.Fprintf(w, "  %s %.1f%%", k, b.pct(b.sys[k]))
			}
		}
		fmt.Fprintln(w)
	}
}

// writeLabels prints the share of each label value, op first.
func (b *breakdown) writeLabels(w io.Writer) {
	var keys []string
	for k := range b.labels {
		keys = append(keys, k)
	}
	notOp := func(k string) bool { return k != "op" }
	slices.SortFunc(keys, func(x, y string) int {
		return cmp.Or(boolCmp(notOp(x), notOp(y)), strings.Compare(x, y))
	})
	if len(keys) == 0 {
		fmt.Fprintln(w, "\nno pprof labels in this profile")
	}
	for _, k := range keys {
		fmt.Fprintf(w, "\nby label %s:\n", k)
		for _, v := range sortedByValue(b.labels[k]) {
			fmt.Fprintf(w, "  %-28s %6.1f%%  %s\n", v, b.pct(b.labels[k][v]), b.format(b.labels[k][v]))
		}
		fmt.Fprintf(w, "  %-28s %6.1f%%\n", "(unlabelled)", b.pct(b.unlabelled(k)))
	}
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// sortedByValue returns m's keys, largest value first.
func sortedByValue(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		return cmp.Or(cmp.Compare(m[y], m[x]), strings.Compare(x, y))
	})
	return keys
}

func (b *breakdown) pct(v int64) float64 { return 100 * float64(v) / float64(b.total) }

// format writes a sample value in its unit (nanoseconds as a duration).
func (b *breakdown) format(v int64) string {
	if b.unit == "nanoseconds" {
		d := time.Duration(v)
		if d >= 10*time.Millisecond {
			return d.Round(time.Millisecond).String()
		}
		return d.Round(time.Microsecond).String()
	}
	return fmt.Sprintf("%d %s", v, b.unit)
}
