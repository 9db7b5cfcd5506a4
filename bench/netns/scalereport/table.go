package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/boltmesh/boltmesh/bench"
)

// writeTables prints a table per run: each op and size, boltmesh beside
// OpenMPI where OpenMPI measured it, and busbw as a share of the link.
func writeTables(out io.Writer, doc *Doc) {
	for _, r := range doc.Runs {
		hosts := fmt.Sprintf("%d hosts", r.Hosts)
		if r.PerHost > 1 {
			hosts += fmt.Sprintf(" of %d ranks (%s)", r.PerHost, r.Placement)
		}
		fmt.Fprintf(out, "== %s, links of %s (%.3f GB/s each way); CPU busy: boltmesh %.0f%%, broadcast %.0f%%, OpenMPI %.0f%%\n",
			hosts, r.Rate, r.LinkGBps, r.CPU.Boltmesh, r.CPU.Broadcast, r.CPU.OpenMPI)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "op\tsize\tboltmesh p50 µs\tbusbw GB/s\tof link\tOpenMPI p50 µs\tbusbw GB/s\tof link\tboltmesh/OpenMPI busbw\t")
		for _, p := range r.Results {
			if p.Impl != "boltmesh" {
				continue
			}
			line := fmt.Sprintf("%s\t%s\t%.1f\t%s\t%s\t", p.Op, bench.FormatSize(int(p.Bytes)), p.P50, gbps(p), ofLink(p))
			if m, ok := r.find("openmpi", p.Op, p.Bytes); ok {
				line += fmt.Sprintf("%.1f\t%s\t%s\t%s\t", m.P50, gbps(m), ofLink(m), ratio(p.BusBW, m.BusBW))
			} else {
				line += "\t\t\t\t"
			}
			if p.Error != "" {
				line += " " + p.Error
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
}

// find returns run r's point of impl for op at size bytes.
func (r Run) find(impl, op string, bytes int64) (Point, bool) {
	for _, p := range r.Results {
		if p.Impl == impl && p.Op == op && p.Bytes == bytes {
			return p, true
		}
	}
	return Point{}, false
}

func gbps(p Point) string {
	if p.Bytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", p.BusBW)
}

func ofLink(p Point) string {
	if p.Bytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", p.OfLink)
}

func ratio(a, b float64) string {
	if b <= 0 || a <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
