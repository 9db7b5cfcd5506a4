package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// coresSchema names the report's format.
const coresSchema = "boltmesh-cores/v1"

// coresReport is what boltmesh cores measured: every round's p50 and p99
// per case and implementation.
type coresReport struct {
	Schema string      `json:"schema"`
	Host   coresHost   `json:"host"`
	Rounds int         `json:"rounds"`
	Cases  []coresCase `json:"cases"`
}

type coresHost struct {
	OS   string `json:"os"`
	CPUs int    `json:"cpus"`
	Go   string `json:"go"`
	Time string `json:"time"`
}

// coresCase is one case's figures: per implementation, one sample a round.
type coresCase struct {
	Op     string              `json:"op"` // allreduce, or pingpong (ranks 0 and 1's round trip)
	Medium string              `json:"medium"`
	Ranks  int                 `json:"ranks"`
	Bytes  int                 `json:"bytes"`
	Impls  map[string][]sample `json:"impls"`
}

// report orders what the sitting measured by medium, world and size.
func (s *sitting) report() *coresReport {
	rep := &coresReport{Schema: coresSchema, Rounds: s.f.rounds,
		Host: coresHost{OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version(), Time: time.Now().UTC().Format(time.RFC3339)}}
	for k, impls := range s.got {
		rep.Cases = append(rep.Cases, coresCase{Op: k.Op, Medium: k.Medium, Ranks: k.Ranks, Bytes: k.Bytes, Impls: impls})
	}
	slices.SortFunc(rep.Cases, func(a, b coresCase) int {
		return cmp.Or(cmp.Compare(a.Op, b.Op), cmp.Compare(a.Medium, b.Medium), cmp.Compare(a.Ranks, b.Ranks), cmp.Compare(a.Bytes, b.Bytes))
	})
	return rep
}

// median returns the median of metric over xs (0: none).
func median(xs []sample, metric func(sample) float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = metric(x)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func p50(x sample) float64 { return x.P50 }
func p99(x sample) float64 { return x.P99 }

// writeTable prints, per medium, a row per world and message size: the
// median p50 and p99 over the rounds of each implementation measured
// there (boltmesh and OpenMPI always, boltmesh-cma, boltmesh with an
// algorithm fixed and Gloo where they ran), boltmesh's p50 over
// OpenMPI's (and boltmesh-cma's), and, with algorithms fixed, which
// boltmesh was fastest.
func (r *coresReport) writeTable(w io.Writer) {
	for _, op := range []string{opAllreduce, opPingpong} {
		for _, medium := range r.media(op) {
			r.writeSection(w, op, medium)
		}
	}
}

// writeSection is writeTable's table of op over medium.
func (r *coresReport) writeSection(w io.Writer, op, medium string) {
	what := "p50 / p99 µs"
	if op == opPingpong {
		what = "round trip p50 / p99 µs"
	}
	fmt.Fprintf(w, "== %s · %s · %s, median of %d rounds ==\n", op, medium, what, r.Rounds)
	cols := r.impls(op, medium)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "ranks\tsize\t", strings.Join(cols, "\t"), "\tp50 ratio\t")
	if slices.Contains(cols, implCopy) {
		fmt.Fprint(tw, "cma ratio\t")
	}
	fixed := slices.ContainsFunc(cols, isAlgorithmImpl)
	if fixed {
		fmt.Fprint(tw, "fastest\t")
	}
	fmt.Fprintln(tw)
	for _, c := range r.Cases {
		if c.Op != op || c.Medium != medium {
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t", c.Ranks, sizeLabel(int64(c.Bytes)))
		for _, impl := range cols {
			fmt.Fprint(tw, pair(c.Impls[impl]), "\t")
		}
		fmt.Fprint(tw, p50Ratio(c.Impls[implBoltmesh], c.Impls[implOpenMPI]), "\t")
		if slices.Contains(cols, implCopy) {
			fmt.Fprint(tw, p50Ratio(c.Impls[implCopy], c.Impls[implOpenMPI]), "\t")
		}
		if fixed {
			fmt.Fprint(tw, fastest(c.Impls), "\t")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// impls lists, in the order of impls, boltmesh and OpenMPI and every
// other implementation measured for op over medium.
func (r *coresReport) impls(op, medium string) []string {
	var out []string
	for _, impl := range impls {
		if impl == implBoltmesh || impl == implOpenMPI {
			out = append(out, impl)
			continue
		}
		for _, c := range r.Cases {
			if c.Op == op && c.Medium == medium && len(c.Impls[impl]) > 0 {
				out = append(out, impl)
				break
			}
		}
	}
	return out
}

// isAlgorithmImpl reports whether impl is boltmesh with its allreduce
// algorithm fixed (cores --algorithms).
func isAlgorithmImpl(impl string) bool {
	return slices.ContainsFunc(sweepAlgorithms, func(a string) bool { return impl == implAlgorithm(a) })
}

// fastest names, of boltmesh left to choose ("auto") and boltmesh with
// each algorithm fixed, the one with the lowest median p50 in impls, or
// "-" if none ran.
func fastest(impls map[string][]sample) string {
	best, name := 0.0, "-"
	for _, algo := range append([]string{"auto"}, sweepAlgorithms...) {
		impl := implBoltmesh
		if algo != "auto" {
			impl = implAlgorithm(algo)
		}
		if xs := impls[impl]; len(xs) > 0 {
			if v := median(xs, p50); name == "-" || v < best {
				best, name = v, algo
			}
		}
	}
	return name
}

// p50Ratio is a's median p50 over b's, or "-" where either has none.
func p50Ratio(a, b []sample) string {
	if len(a) == 0 || len(b) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", median(a, p50)/median(b, p50))
}

// pair is "p50 / p99", or "-" for no samples.
func pair(xs []sample) string {
	if len(xs) == 0 {
		return "-"
	}
	return micro(median(xs, p50)) + " / " + micro(median(xs, p99))
}

// media lists the media op was measured over, in order.
func (r *coresReport) media(op string) []string {
	var out []string
	for _, c := range r.Cases {
		if c.Op == op && !slices.Contains(out, c.Medium) {
			out = append(out, c.Medium)
		}
	}
	return out
}

// writeJSONFile writes v as indented JSON to file.
func writeJSONFile(file string, v any) error {
	return writeFile(file, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// writePlots writes, for the allreduce, per medium, allreduce-MEDIUM-SIZE.svg (p50 and p99
// against the world size) for every message size and
// allreduce-MEDIUM-nRANKS.svg (against the message size) for every world
// size, one colour per implementation, p99 dashed.
func (r *coresReport) writePlots(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	for _, medium := range r.media(opAllreduce) {
		var worlds []int
		var sizes []int64
		for _, c := range r.Cases {
			if c.Op == opAllreduce && c.Medium == medium {
				if !slices.Contains(worlds, c.Ranks) {
					worlds = append(worlds, c.Ranks)
				}
				if !slices.Contains(sizes, int64(c.Bytes)) {
					sizes = append(sizes, int64(c.Bytes))
				}
			}
		}
		slices.Sort(sizes)
		for _, b := range sizes {
			ss := r.series(medium, func(c coresCase) (float64, bool) { return float64(c.Ranks), int64(c.Bytes) == b })
			file := filepath.Join(dir, fmt.Sprintf("allreduce-%s-%s.svg", medium, sizeFile(b)))
			title := fmt.Sprintf("allreduce · %s · %s: latency against ranks (p50 solid, p99 dashed)", medium, sizeLabel(b))
			if err := lineChart(file, title, "ranks", "µs", rankTicks(worlds), false, ss); err != nil {
				return fmt.Errorf("--plot: %s: %w", file, err)
			}
		}
		for _, n := range worlds {
			ss := r.series(medium, func(c coresCase) (float64, bool) { return float64(c.Bytes), c.Ranks == n })
			file := filepath.Join(dir, fmt.Sprintf("allreduce-%s-n%d.svg", medium, n))
			title := fmt.Sprintf("allreduce · %s · %d ranks: latency against size (p50 solid, p99 dashed)", medium, n)
			if err := lineChart(file, title, "message size", "µs", sizeTicks(sizes), true, ss); err != nil {
				return fmt.Errorf("--plot: %s: %w", file, err)
			}
		}
	}
	return nil
}

// series is each implementation's p50 and p99 medians over the cases of
// medium that at picks, at the x it gives.
func (r *coresReport) series(medium string, at func(coresCase) (x float64, ok bool)) []series {
	var out []series
	for _, impl := range impls {
		for _, m := range []struct {
			name   string
			dashed bool
			of     func(sample) float64
		}{{"p50", false, p50}, {"p99", true, p99}} {
			s := series{label: impl + " " + m.name, dashed: m.dashed}
			for _, c := range r.Cases {
				if x, ok := at(c); ok && c.Op == opAllreduce && c.Medium == medium && len(c.Impls[impl]) > 0 {
					s.xys = append(s.xys, plotter.XY{X: x, Y: median(c.Impls[impl], m.of)})
				}
			}
			if len(s.xys) > 0 {
				slices.SortFunc(s.xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
				out = append(out, s)
			}
		}
	}
	return out
}

// rankTicks marks the measured world sizes.
type rankTicks []int

// Ticks implements plot.Ticker.
func (t rankTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, n := range t {
		if v := float64(n); v >= lo && v <= hi {
			out = append(out, plot.Tick{Value: v, Label: strconv.Itoa(n)})
		}
	}
	return out
}

// sizeFile writes a size for a file name: 8B, 64KiB, 1MiB.
func sizeFile(n int64) string { return strings.ReplaceAll(sizeLabel(n), " ", "") }
