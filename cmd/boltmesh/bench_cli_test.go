package main

import (
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/bench"
)

// readReport reads and validates a boltmesh-bench/v1 file.
func readReport(t *testing.T, file string) *bench.Report {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := bench.ReadReport(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return rep
}

func TestBenchQuickJSON(t *testing.T) {
	dir := quick(t)
	rep := readReport(t, filepath.Join(dir, "out.json"))
	want := map[string]bool{}
	for _, s := range bench.DefaultSuites {
		want[s] = true
	}
	for _, r := range rep.Results {
		delete(want, r.Suite)
		if r.Ranks != 2 || r.Error != "" {
			t.Errorf("%s %s: ranks %d, error %q", r.Impl, r.Key(), r.Ranks, r.Error)
		}
		if r.Suite != "barrier" && r.Bytes <= 0 {
			t.Errorf("%s %s: %d bytes", r.Impl, r.Key(), r.Bytes)
		}
		if (r.Suite == "msgrate") != (r.MsgRate > 0) {
			t.Errorf("%s %s: message rate %v", r.Impl, r.Key(), r.MsgRate)
		}
	}
	if len(want) > 0 {
		t.Errorf("suites missing from the report: %v", want)
	}
	for _, s := range []string{"== p2p · 2 ranks", "== msgrate", "Mmsg/s", "== allreduce", "== rpc", "stdnet p50", "ratio"} {
		if !strings.Contains(quickRun.stdout, s) {
			t.Errorf("table output lacks %q:\n%s", s, quickRun.stdout)
		}
	}
}

func TestBenchCSV(t *testing.T) {
	f, err := os.Open(filepath.Join(quick(t), "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rep := readReport(t, filepath.Join(quick(t), "out.json"))
	if len(rows) != len(rep.Results)+1 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("%d CSV rows for %d results; header %v", len(rows), len(rep.Results), rows[0])
	}
}

func TestBenchPlotSVG(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(quick(t), "plots", "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("%d SVG files: %v", len(files), files)
	}
	for _, f := range files {
		text := svgText(t, f)
		for _, series := range []string{bench.ImplBoltmesh, bench.ImplStdnet} {
			if !strings.Contains(text, series) {
				t.Errorf("%s: no %q series in the legend", filepath.Base(f), series)
			}
		}
	}
}

// svgText parses file as XML (failing the test if it is not) and returns
// its character data.
func svgText(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var text strings.Builder
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not XML: %v", file, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", file, root)
	}
	return text.String()
}

// TestBenchStar runs a local 3-rank star (--coordinator): every suite
// verifies the bytes it moves, worker to worker included, and the run
// fails if any check does.
func TestBenchStar(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 ranks; skipped with -short")
	}
	file := filepath.Join(t.TempDir(), "star.json")
	stdout, stderr, err := cli(t, "bench", "--quick", "--ranks", "3", "--coordinator", "127.0.0.1:0",
		"--suite", "p2p,putget,barrier,allreduce,rpc", "--baseline", "none", "--json", file)
	if err != nil {
		t.Fatalf("bench over a star: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	rep := readReport(t, file)
	if len(rep.Results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range rep.Results {
		if r.Ranks != 3 || r.Error != "" {
			t.Errorf("%s %s: ranks %d, error %q", r.Impl, r.Key(), r.Ranks, r.Error)
		}
	}
}
