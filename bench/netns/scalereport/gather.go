package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

// Schema names the document's format.
const Schema = "boltmesh-scale/v1"

// Doc is the boltmesh-scale/v1 document: one Run per world size.
type Doc struct {
	Schema string     `json:"schema"`
	Host   bench.Host `json:"host"`
	Runs   []Run      `json:"runs"`
}

// Run is one world size on its emulated hosts.
type Run struct {
	Hosts int `json:"hosts"`
	// PerHost is the ranks on each host (1 unless given), and Placement
	// how they were numbered: "together" (host by host) or "alternate"
	// (one host after another in turn).
	PerHost   int     `json:"ranks_per_host"`
	Placement string  `json:"placement"`
	worlds    []world // of each boltmesh result read, checked once the run is known
	// Rate is the link rate as tc was given it, and LinkGBps the same in
	// GB/s (1e9 bytes): the most a link moves each way.
	Rate     string  `json:"rate"`
	LinkGBps float64 `json:"link_gbps"`
	// CPU is the machine's busy share (percent, all cores) during each
	// part of the run.
	CPU     CPU     `json:"cpu_pct"`
	Results []Point `json:"results"`
}

// world is the ranks of a boltmesh result, and the file it came from.
type world struct {
	file  string
	ranks int
}

// CPU is the machine's busy share during a run's parts.
type CPU struct {
	Boltmesh  float64 `json:"boltmesh"`
	Broadcast float64 `json:"broadcast"`
	OpenMPI   float64 `json:"openmpi"`
}

// Point is one measured case: an op at a size, on an implementation.
type Point struct {
	Impl  string  `json:"impl"` // boltmesh or openmpi
	Op    string  `json:"op"`   // allreduce, barrier or broadcast
	Bytes int64   `json:"bytes"`
	Iters int     `json:"iters,omitempty"`
	P50   float64 `json:"p50_us"`
	BusBW float64 `json:"busbw_gbps"`
	// OfLink is BusBW over the link rate.
	OfLink float64 `json:"busbw_of_link"`
	Error  string  `json:"error,omitempty"`
}

// printSizes prints list (bench's size syntax) as bytes, space-separated.
func printSizes(out io.Writer, list string) error {
	sizes, err := bench.ParseSizes(list)
	if err != nil {
		return err
	}
	strs := make([]string, len(sizes))
	for i, s := range sizes {
		strs[i] = strconv.Itoa(s)
	}
	_, err = fmt.Fprintln(out, strings.Join(strs, " "))
	return err
}

// gather reads every --run into a Doc, in the order given.
func gather(runs []string) (*Doc, error) {
	doc := &Doc{Schema: Schema, Host: bench.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version(), Time: time.Now().UTC()}}
	for _, spec := range runs {
		r, err := gatherRun(spec)
		if err != nil {
			return nil, fmt.Errorf("--run %s: %w", spec, err)
		}
		doc.Runs = append(doc.Runs, r)
	}
	return doc, nil
}

// gatherRun reads one --run: key=value pairs, comma-separated.
func gatherRun(spec string) (Run, error) {
	r := Run{PerHost: 1, Placement: "together"}
	var err error
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return r, fmt.Errorf("%q is not key=value", kv)
		}
		switch k {
		case "hosts":
			r.Hosts, err = strconv.Atoi(v)
		case "per_host":
			r.PerHost, err = strconv.Atoi(v)
		case "placement":
			r.Placement = v
		case "rate":
			r.Rate = v
			r.LinkGBps, err = rateGBps(v)
		case "cpu":
			r.CPU.Boltmesh, err = strconv.ParseFloat(v, 64)
		case "cpu_bcast":
			r.CPU.Broadcast, err = strconv.ParseFloat(v, 64)
		case "cpu_mpi":
			r.CPU.OpenMPI, err = strconv.ParseFloat(v, 64)
		case "boltmesh":
			err = r.addBoltmesh(v)
		case "openmpi":
			err = r.addOpenMPI(v)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return r, err
		}
	}
	if r.Hosts < 2 || r.LinkGBps <= 0 {
		return r, fmt.Errorf("hosts %d, link rate %q: both are needed", r.Hosts, r.Rate)
	}
	if r.PerHost < 1 || r.Placement != "together" && r.Placement != "alternate" {
		return r, fmt.Errorf("per_host %d, placement %q: want at least 1, and together or alternate", r.PerHost, r.Placement)
	}
	for _, w := range r.worlds {
		if w.ranks != r.Hosts*r.PerHost {
			return r, fmt.Errorf("%s: a result of %d ranks in a run of %d hosts of %d", w.file, w.ranks, r.Hosts, r.PerHost)
		}
	}
	for i := range r.Results {
		r.Results[i].OfLink = r.Results[i].BusBW / r.LinkGBps
	}
	slices.SortStableFunc(r.Results, func(a, b Point) int {
		if c := strings.Compare(a.Op, b.Op); c != 0 {
			return c
		}
		if a.Bytes != b.Bytes {
			return int(a.Bytes - b.Bytes)
		}
		return strings.Compare(a.Impl, b.Impl)
	})
	return r, nil
}

// rateGBps converts a tc rate (bit, kbit, mbit, gbit, tbit; bps and the
// like are bytes) into GB/s.
func rateGBps(s string) (float64, error) {
	units := []struct {
		suffix string
		bits   float64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"tbps", 8e12}, {"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3}, {"bps", 8}, {"bit", 1}}
	l := strings.ToLower(s)
	for _, u := range units {
		if num, ok := strings.CutSuffix(l, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("link rate %q", s)
			}
			return v * u.bits / 8e9, nil
		}
	}
	return 0, fmt.Errorf("link rate %q: want tc's units, e.g. 1gbit or 400mbit", s)
}

// addBoltmesh adds the boltmesh results of a bench report.
func (r *Run) addBoltmesh(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := bench.ReadReport(f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, x := range rep.Results {
		if x.Impl != bench.ImplBoltmesh {
			continue
		}
		r.worlds = append(r.worlds, world{file, x.Ranks})
		r.Results = append(r.Results, Point{Impl: "boltmesh", Op: x.Op, Bytes: x.Bytes, Iters: x.Iters, P50: x.P50, BusBW: x.BusBW, Error: x.Error})
	}
	return nil
}

// addOpenMPI adds mpi_allreduce's lines: bytes, median µs, algbw, busbw,
// and p99 µs (not kept here) where the anchor gives it.
func (r *Run) addOpenMPI(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 && len(fields) != 5 {
			return fmt.Errorf("%s: line %q: want bytes p50_us algbw busbw [p99_us]", file, sc.Text())
		}
		var v [5]float64
		for i, s := range fields {
			if v[i], err = strconv.ParseFloat(s, 64); err != nil {
				return fmt.Errorf("%s: line %q: %w", file, sc.Text(), err)
			}
		}
		r.Results = append(r.Results, Point{Impl: "openmpi", Op: "allreduce", Bytes: int64(v[0]), P50: v[1], BusBW: v[3]})
	}
	return sc.Err()
}

// writeJSONFile writes doc, indented, to file.
func writeJSONFile(file string, doc *Doc) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}
