package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/internal/racedetect"
)

// TestSoak runs "boltmesh soak" with 32 local ranks (8 under the race
// detector, whose ranks are several times bigger and slower) for 2 s:
// the mesh forms, every rank runs the same number of iterations with
// every result right, and each reports its descriptors, threads and
// memory within bounds that a leak per iteration or per peer would
// break.
func TestSoak(t *testing.T) {
	n := 32
	if racedetect.Enabled {
		n = 8
	}
	out := filepath.Join(t.TempDir(), "soak.json")
	stdout, stderr, err := cli(t, "soak", "--ranks", strconv.Itoa(n), "--duration", "2s", "--heap", "1M", "--force", "--json", out)
	if err != nil {
		t.Fatalf("soak: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "== soak · "+strconv.Itoa(n)+" ranks") {
		t.Errorf("no soak header in the output:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep soakReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != soakSchema || rep.World != n || len(rep.Ranks) != n || rep.Iters < 2 || rep.Bytes != 1024 || !(rep.Setup > 0) || !(rep.AllReduce > 0) {
		t.Fatalf("report %+v", rep)
	}
	for i, r := range rep.Ranks {
		if r.Rank != i || r.Iters != rep.Iters || r.Bad != 0 || !(r.Setup > 0) {
			t.Errorf("rank %d: %+v, want %d iterations, none bad", i, r, rep.Iters)
		}
		if runtime.GOOS != "linux" {
			continue
		}
		// Per peer: a TCP connection (and a stream), the pair's memory,
		// its bells and the neighbour's heap; 8 per peer is ample.
		if r.FDs <= 0 || r.PeakFDs < r.FDs || r.PeakFDs > 8*n+64 {
			t.Errorf("rank %d: %d fds, peak %d, for %d peers", i, r.FDs, r.PeakFDs, n-1)
		}
		if r.Threads <= 0 || r.PeakThr < r.Threads || r.PeakThr > 64 {
			t.Errorf("rank %d: %d threads, peak %d", i, r.Threads, r.PeakThr)
		}
		if r.RSS <= 0 || r.PeakRSS < r.RSS {
			t.Errorf("rank %d: RSS %d, peak %d", i, r.RSS, r.PeakRSS)
		}
	}
}

// TestSoakCheck: a wrong element or stop word counts as a bad result,
// and the first one is described.
func TestSoakCheck(t *testing.T) {
	l := soakLoop{rank: 0, world: 3, n: 4}
	data := make([]float32, 5)
	fill := func(i int) {
		for j := range 4 {
			data[j] = soakValue(0, i, j) + soakValue(1, i, j) + soakValue(2, i, j)
		}
		data[4] = 0
	}
	fill(7)
	l.check(7, data)
	if l.bad != 0 {
		t.Fatalf("right result counted bad: %s", l.first)
	}
	data[2]++
	l.check(7, data)
	fill(8)
	data[4] = 2
	l.check(8, data)
	if l.bad != 2 || !strings.Contains(l.first, "iteration 7 element 2") {
		t.Errorf("bad %d, first %q", l.bad, l.first)
	}
}

// TestSoakFlags: bad sizes and worlds are refused before anything
// starts, naming the flag.
func TestSoakFlags(t *testing.T) {
	for _, args := range [][]string{
		{"soak", "--size", "6"},
		{"soak", "--size", "0"},
		{"soak", "--ranks", "1"},
		{"soak", "--duration", "-1s"},
	} {
		_, stderr, err := cli(t, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, "--"+strings.TrimPrefix(args[1], "--")) {
			t.Errorf("%v: %v, stderr %q", args, err, stderr)
		}
	}
}
