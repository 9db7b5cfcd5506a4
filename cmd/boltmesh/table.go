package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
)

// row is one line of a suite's table: a case on boltmesh and, if measured,
// on the baseline.
type row struct {
	op        string
	bytes     int64
	bolt, std *bench.Result
}

// writeTables prints one table per suite, in run order.
func writeTables(w io.Writer, rep *bench.Report) {
	for _, suite := range suitesOf(rep) {
		writeTable(w, suite, rowsOf(rep, suite))
	}
	for _, r := range rep.Failed() {
		fmt.Fprintf(w, "FAILED %s %s %s %s: %s\n", r.Suite, r.Op, r.Impl, bench.FormatSize(int(r.Bytes)), r.Error)
	}
}

// writeCongestionNote says which TCP congestion control each side of the
// comparison used, when it is known: boltmesh's is chosen (flag, the
// --congestion value), stdnet's is the system's, named only if stdnet
// ran. boltTCP is whether any of boltmesh's pairs goes over TCP; where
// none does (every pair over shared memory), boltmesh's is not named.
func writeCongestionNote(w io.Writer, rep *bench.Report, flag string, boltTCP bool) {
	sys := rep.Host.Congestion
	if sys == "" || len(rep.Results) == 0 {
		return
	}
	stdnet := slices.ContainsFunc(rep.Results, func(r bench.Result) bool { return r.Impl == bench.ImplStdnet })
	if !boltTCP {
		if stdnet {
			fmt.Fprintf(w, "TCP congestion control: stdnet %s (the system's); boltmesh's pairs use no TCP\n", sys)
		}
		return
	}
	bolt := flag
	switch flag {
	case "":
		bolt = engine.LoopbackCongestion + " on loopback, " + sys + " on other links"
	case engine.CongestionSystem:
		bolt = sys
	}
	if !stdnet {
		fmt.Fprintf(w, "TCP congestion control: boltmesh %s\n", bolt)
		return
	}
	fmt.Fprintf(w, "TCP congestion control: boltmesh %s; stdnet %s (the system's; --congestion system gives boltmesh the same)\n", bolt, sys)
}

// suitesOf lists the suites in rep in order of appearance.
func suitesOf(rep *bench.Report) []string {
	var out []string
	for _, r := range rep.Results {
		if len(out) == 0 || out[len(out)-1] != r.Suite {
			out = append(out, r.Suite)
		}
	}
	return out
}

// rowsOf pairs suite's boltmesh and baseline results by op and size.
func rowsOf(rep *bench.Report, suite string) []*row {
	var rows []*row
	index := map[string]*row{}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Suite != suite {
			continue
		}
		k := r.Key()
		x := index[k]
		if x == nil {
			x = &row{op: r.Op, bytes: r.Bytes}
			index[k] = x
			rows = append(rows, x)
		}
		if r.Impl == bench.ImplBoltmesh {
			x.bolt = r
		} else {
			x.std = r
		}
	}
	return rows
}

func writeTable(w io.Writer, suite string, rows []*row) {
	if len(rows) == 0 {
		return
	}
	first, baseline := rows[0].bolt, false
	for _, r := range rows {
		baseline = baseline || r.std != nil
		if first == nil {
			first = r.std
		}
	}
	bw, rate := "GB/s", counts(first)
	switch {
	case rate:
		bw = "Mmsg/s"
	case suite == "allreduce":
		bw = "busbw GB/s"
	}
	fmt.Fprintf(w, "\n== %s · %s · %s ==\n", suite, plural(first.Ranks, "rank"), transportOf(first))
	width := 0
	for _, r := range rows {
		width = max(width, len(r.op))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := fmt.Sprintf("%-*s\tsize\tp50 µs\tp99 µs\t%s\t", width, "op", bw)
	if baseline {
		head += fmt.Sprintf("│\tstdnet p50\tstdnet p99\tstdnet %s\t│\tratio\t", bw)
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		line := fmt.Sprintf("%-*s\t%s\t%s\t", width, r.op, bench.FormatSize(int(r.bytes)), cells(r.bolt, rate))
		if baseline {
			line += fmt.Sprintf("│\t%s\t│\t%s\t", cells(r.std, rate), ratio(r))
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if baseline {
		fmt.Fprintln(w, ratioNote(rows))
	}
}

// ratioNote explains the ratio column of rows.
func ratioNote(rows []*row) string {
	note := "ratio = stdnet p50 / boltmesh p50"
	for _, r := range rows {
		if r.bolt != nil && throughput(r.bolt) {
			unit := "GB/s"
			if counts(r.bolt) {
				unit = "Mmsg/s"
			}
			note += "; for " + r.op + ", boltmesh " + unit + " / stdnet " + unit
			break
		}
	}
	return note + " (above 1: boltmesh is faster)"
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func transportOf(r *bench.Result) string {
	if r.Transport == "" {
		return "tcp"
	}
	return r.Transport
}

// cells formats p50, p99 and bandwidth (rate: millions of messages
// per second), or dashes.
func cells(r *bench.Result, rate bool) string {
	if r == nil {
		return "-\t-\t-"
	}
	bw := "-"
	switch {
	case rate:
		bw = gbps(r.MsgRate / 1e6)
	case r.Bytes > 0:
		bw = gbps(r.BusBW)
	}
	return strings.Join([]string{micro(r.P50), micro(r.P99), bw}, "\t")
}

// micro formats microseconds with about three significant digits.
func micro(us float64) string {
	switch {
	case us >= 1000:
		return fmt.Sprintf("%.0f", us)
	case us >= 10:
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.2f", us)
}

// gbps formats a bandwidth with about three significant digits.
func gbps(v float64) string {
	switch {
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.5f", v)
}

// ratio compares boltmesh with the baseline, above 1 when boltmesh is
// faster: by p50 latency, or by bandwidth for throughput ops.
func ratio(r *row) string {
	switch {
	case r.bolt == nil || r.std == nil || r.bolt.P50 <= 0:
		return "-"
	case throughput(r.bolt) && r.std.AlgBW > 0:
		return fmt.Sprintf("%.2fx", r.bolt.AlgBW/r.std.AlgBW)
	}
	return fmt.Sprintf("%.2fx", r.std.P50/r.bolt.P50)
}

// throughput reports whether r's op is compared by bandwidth (or by
// message rate, which is proportional to it).
func throughput(r *bench.Result) bool {
	op := opOf(r)
	return op != nil && op.Throughput
}

// counts reports whether r's op counts messages (bench.Op.Messages).
func counts(r *bench.Result) bool {
	op := opOf(r)
	return op != nil && op.Messages != nil
}

// opOf is the registered op that produced r, or nil.
func opOf(r *bench.Result) *bench.Op {
	s := bench.Lookup(r.Suite)
	if s == nil {
		return nil
	}
	for i := range s.Ops {
		if s.Ops[i].Name == r.Op {
			return &s.Ops[i]
		}
	}
	return nil
}
