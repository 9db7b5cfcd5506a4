package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/boltmesh/boltmesh/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chart is one SVG: metrics against message size for one op, one series
// per implementation and metric.
type chart struct {
	file, title, ylabel string
	metrics             []metric
}

// metric is one line style of a chart: p50 solid, p99 dashed.
type metric struct {
	name   string // "" on a chart of one metric
	dashed bool
	of     func(bench.Result) float64
}

// writePlots writes, for every op measured at more than one non-zero
// size, DIR/SUITE-OP-latency.svg (p50 solid, p99 dashed) and
// DIR/SUITE-OP-bandwidth.svg (busbw, which is algbw except for
// allreduce), boltmesh and the baseline on the same axes, titled with the
// op, the ranks and the transport, sizes written as 8 B, 64 KiB, 1 MiB.
func writePlots(dir string, rep *bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	for _, suite := range suitesOf(rep) {
		for _, op := range opsOf(rep, suite) {
			if len(sizesOf(rep, suite, op)) < 2 {
				continue // one point (a barrier) is not a curve
			}
			for _, c := range chartsFor(rep, suite, op) {
				if err := writeChart(filepath.Join(dir, c.file), c, seriesOf(rep, suite, op, c.metrics), sizesOf(rep, suite, op)); err != nil {
					return fmt.Errorf("--plot: %s: %w", c.file, err)
				}
			}
		}
	}
	return nil
}

func chartsFor(rep *bench.Report, suite, op string) []chart {
	name := suite + "-" + op
	what := caseTitle(rep, suite, op)
	return []chart{
		{name + "-latency.svg", what + ": latency (p50 solid, p99 dashed)", "µs", []metric{
			{"p50", false, func(r bench.Result) float64 { return r.P50 }},
			{"p99", true, func(r bench.Result) float64 { return r.P99 }},
		}},
		{name + "-bandwidth.svg", what + ": bandwidth", "GB/s (busbw)", []metric{
			{"", false, func(r bench.Result) float64 { return r.BusBW }},
		}},
	}
}

// caseTitle names what suite/op measured once: the op (the suite too
// where it says more, as "p2p pingpong" does not), the ranks and
// boltmesh's transport, e.g. "allreduce · 4 ranks · shm".
func caseTitle(rep *bench.Report, suite, op string) string {
	parts := []string{op}
	if op != suite && !strings.HasPrefix(op, suite) && suite != "p2p" {
		parts[0] = suite + " " + op
	}
	for _, r := range rep.Results {
		if r.Suite == suite && r.Op == op && r.Impl == bench.ImplBoltmesh {
			parts = append(parts, fmt.Sprintf("%d ranks", r.Ranks))
			if r.Transport != "" {
				parts = append(parts, r.Transport)
			}
			break
		}
	}
	return strings.Join(parts, " · ")
}

// series is one implementation's points of one metric.
type series struct {
	label  string
	dashed bool
	xys    plotter.XYs
}

// seriesOf returns boltmesh's and the baseline's points for suite/op,
// one series per metric.
func seriesOf(rep *bench.Report, suite, op string, ms []metric) []series {
	var out []series
	for _, impl := range []string{bench.ImplBoltmesh, bench.ImplStdnet} {
		for _, m := range ms {
			s := series{label: strings.TrimSpace(impl + " " + m.name), dashed: m.dashed}
			for _, r := range rep.Results {
				if r.Suite == suite && r.Op == op && r.Impl == impl && r.Bytes > 0 && m.of(r) > 0 {
					s.xys = append(s.xys, plotter.XY{X: float64(r.Bytes), Y: m.of(r)})
				}
			}
			if len(s.xys) > 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

func writeChart(file string, c chart, ss []series, sizes []int64) error {
	return lineChart(file, c.title, "message size", c.ylabel, sizeTicks(sizes), true, ss)
}

// lineChart writes one SVG of ss on a log y axis (and a log x axis when
// logX), xTicks marking x: one colour per implementation (the label's
// first word), a dashed, lighter line for a series marked dashed.
func lineChart(file, title, xlabel, ylabel string, xTicks plot.Ticker, logX bool, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	p.Y.Scale = plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = xTicks, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	impls := map[string]int{}
	for _, s := range ss {
		impl, _, _ := strings.Cut(s.label, " ")
		i, ok := impls[impl]
		if !ok {
			i = len(impls)
			impls[impl] = i
		}
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		col := plotutil.Color(i)
		l.Color, pts.Color, pts.Shape = col, col, plotutil.Shape(i)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			l.Color = fade(col)
		}
		p.Add(l, pts)
		p.Legend.Add(s.label, l, pts)
	}
	if p.Y.Min == p.Y.Max { // one value: a log axis needs a range around it
		p.Y.Min, p.Y.Max = p.Y.Min/2, p.Y.Max*2
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

// fade is c a little lighter, for a series' second metric.
func fade(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	lift := func(v uint32) uint8 { return uint8((v>>8)/2 + 127) }
	return color.RGBA{lift(r), lift(g), lift(b), 255}
}

// sizeTicks marks the measured sizes on a size axis, written as 8 B,
// 64 KiB, 1 MiB rather than in raw bytes.
type sizeTicks []int64

// Ticks implements plot.Ticker.
func (s sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, n := range s {
		if v := float64(n); v >= lo && v <= hi {
			out = append(out, plot.Tick{Value: v, Label: sizeLabel(n)})
		}
	}
	return out
}

// sizeLabel writes n bytes as 8 B, 1 KiB, 1.5 MiB.
func sizeLabel(n int64) string {
	s := bench.FormatSize(int(n))
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		return s
	}
	return s[:i] + " " + s[i:]
}

// opsOf lists suite's ops in order of appearance.
func opsOf(rep *bench.Report, suite string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if r.Suite == suite && !seen[r.Op] {
			seen[r.Op] = true
			out = append(out, r.Op)
		}
	}
	return out
}

// sizesOf returns the distinct non-zero sizes of suite/op, in order.
func sizesOf(rep *bench.Report, suite, op string) []int64 {
	var sizes []int64
	for _, r := range rep.Results {
		if r.Suite == suite && r.Op == op && r.Bytes > 0 && !slices.Contains(sizes, r.Bytes) {
			sizes = append(sizes, r.Bytes)
		}
	}
	slices.Sort(sizes)
	return sizes
}
