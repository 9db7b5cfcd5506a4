package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/boltmesh/boltmesh/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writePlots writes to dir allreduce-busbw-of-link.svg (the largest
// allreduce's busbw over the link rate against the world size, boltmesh
// and OpenMPI, with the link as 1) and allreduce-latency.svg (the
// smallest allreduce's p50 against the world size, with log2(N) steps of
// boltmesh's time at the smallest world for reference).
func writePlots(dir string, doc *Doc) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	lo, hi := sizeRange(doc)
	if hi == 0 {
		return fmt.Errorf("--plot: no allreduce measured")
	}
	bw := map[string]plotter.XYs{}
	lat := map[string]plotter.XYs{}
	var link, steps plotter.XYs
	var base float64
	for _, r := range doc.Runs {
		n := float64(r.Hosts)
		link = append(link, plotter.XY{X: n, Y: 1})
		for _, impl := range []string{"boltmesh", "openmpi"} {
			if p, ok := r.find(impl, "allreduce", hi); ok {
				bw[impl] = append(bw[impl], plotter.XY{X: n, Y: p.OfLink})
			}
			if p, ok := r.find(impl, "allreduce", lo); ok {
				lat[impl] = append(lat[impl], plotter.XY{X: n, Y: p.P50})
				if impl == "boltmesh" && base == 0 {
					base = p.P50 / math.Log2(n)
				}
			}
		}
	}
	for _, r := range doc.Runs {
		steps = append(steps, plotter.XY{X: float64(r.Hosts), Y: base * math.Log2(float64(r.Hosts))})
	}
	if err := chart(filepath.Join(dir, "allreduce-busbw-of-link.svg"),
		fmt.Sprintf("allreduce of %s: busbw over the link rate", bench.FormatSize(int(hi))), "busbw / link rate",
		[]line{{"boltmesh", bw["boltmesh"]}, {"OpenMPI", bw["openmpi"]}, {"link", link}}); err != nil {
		return err
	}
	return chart(filepath.Join(dir, "allreduce-latency.svg"),
		fmt.Sprintf("allreduce of %s: median latency", bench.FormatSize(int(lo))), "p50 (µs)",
		[]line{{"boltmesh", lat["boltmesh"]}, {"OpenMPI", lat["openmpi"]}, {"log2(N) steps", steps}})
}

// sizeRange returns the smallest and largest allreduce sizes measured.
func sizeRange(doc *Doc) (lo, hi int64) {
	lo = math.MaxInt64
	for _, r := range doc.Runs {
		for _, p := range r.Results {
			if p.Op == "allreduce" {
				lo, hi = min(lo, p.Bytes), max(hi, p.Bytes)
			}
		}
	}
	return lo, hi
}

// line is one named series of a chart.
type line struct {
	name string
	xys  plotter.XYs
}

// chart writes one SVG of lines against the world size.
func chart(file, title, ylabel string, lines []line) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "hosts (ranks)"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top = true
	var args []any
	var ticks []plot.Tick
	for _, l := range lines {
		if len(l.xys) > 0 {
			args = append(args, l.name, l.xys)
		}
		for _, xy := range l.xys {
			if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == xy.X }) {
				ticks = append(ticks, plot.Tick{Value: xy.X, Label: strconv.FormatFloat(xy.X, 'f', -1, 64)})
			}
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks) // the world sizes measured
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return fmt.Errorf("--plot: %s: %w", file, err)
	}
	if err := p.Save(6*vg.Inch, 4*vg.Inch, file); err != nil {
		return fmt.Errorf("--plot: %s: %w", file, err)
	}
	return nil
}
