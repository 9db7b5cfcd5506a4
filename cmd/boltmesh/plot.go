package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/boltmesh/boltmesh/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chart is one SVG: a metric against message size for one op, one series
// per implementation.
type chart struct {
	file, title, ylabel string
	metric              func(bench.Result) float64
}

// writePlots writes, for every op measured at more than one non-zero
// size, DIR/SUITE-OP-latency.svg (p50) and DIR/SUITE-OP-bandwidth.svg
// (busbw, which is algbw except for allreduce), boltmesh and the baseline
// on the same axes.
func writePlots(dir string, rep *bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	for _, suite := range suitesOf(rep) {
		for _, op := range opsOf(rep, suite) {
			if countSizes(rep, suite, op) < 2 {
				continue // one point (a barrier) is not a curve
			}
			for _, c := range chartsFor(suite, op) {
				if err := writeChart(filepath.Join(dir, c.file), c, seriesOf(rep, suite, op, c.metric)); err != nil {
					return fmt.Errorf("--plot: %s: %w", c.file, err)
				}
			}
		}
	}
	return nil
}

func chartsFor(suite, op string) []chart {
	name := suite + "-" + op
	return []chart{
		{name + "-latency.svg", fmt.Sprintf("%s %s: median latency", suite, op), "p50 (µs)", func(r bench.Result) float64 { return r.P50 }},
		{name + "-bandwidth.svg", fmt.Sprintf("%s %s: bandwidth", suite, op), "GB/s (busbw)", func(r bench.Result) float64 { return r.BusBW }},
	}
}

// series is one implementation's points.
type series struct {
	impl string
	xys  plotter.XYs
}

// seriesOf returns boltmesh's and the baseline's points for suite/op.
func seriesOf(rep *bench.Report, suite, op string, metric func(bench.Result) float64) []series {
	var out []series
	for _, impl := range []string{bench.ImplBoltmesh, bench.ImplStdnet} {
		s := series{impl: impl}
		for _, r := range rep.Results {
			if r.Suite == suite && r.Op == op && r.Impl == impl && r.Bytes > 0 && metric(r) > 0 {
				s.xys = append(s.xys, plotter.XY{X: float64(r.Bytes), Y: metric(r)})
			}
		}
		if len(s.xys) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func writeChart(file string, c chart, ss []series) error {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = c.ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	var args []any
	for _, s := range ss {
		args = append(args, s.impl, s.xys)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return err
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
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

// countSizes counts the distinct non-zero sizes of suite/op.
func countSizes(rep *bench.Report, suite, op string) int {
	sizes := map[int64]bool{}
	for _, r := range rep.Results {
		if r.Suite == suite && r.Op == op && r.Bytes > 0 {
			sizes[r.Bytes] = true
		}
	}
	return len(sizes)
}
