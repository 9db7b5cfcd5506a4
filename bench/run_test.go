package bench_test

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

func quickConfig(suites ...string) bench.Config {
	return bench.Config{Suites: suites, Sizes: []int{8, 4 << 10, 256 << 10}, Plan: bench.Plan{Duration: 5 * time.Millisecond, Warmup: 2, MinIters: 3}}
}

func TestRunAllSuites(t *testing.T) {
	for _, n := range []int{2, 3} {
		rep, errs := runRanks(t, n, quickConfig())
		noErrors(t, errs)
		if rep == nil {
			t.Fatal("no report on rank 0")
		}
		if err := rep.Validate(); err != nil {
			t.Fatal(err)
		}
		// 3 sizes x (2+1+2 ops p2p/msgrate/putget + 1 allreduce + 1 rpc) + 1 barrier, x 2 impls
		if want := 2 * (3*7 + 1); len(rep.Results) != want {
			t.Errorf("%d ranks: %d results, want %d", n, len(rep.Results), want)
		}
		var buf bytes.Buffer
		if err := rep.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := bench.ReadReport(&buf); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBroadcastSuite: the broadcast suite runs on both implementations
// at 2 and 3 ranks, every rank checking every byte of the last message.
func TestBroadcastSuite(t *testing.T) {
	for _, n := range []int{2, 3} {
		rep, errs := runRanks(t, n, quickConfig("broadcast"))
		noErrors(t, errs)
		if rep == nil {
			t.Fatal("no report on rank 0")
		}
		if want := 2 * 3; len(rep.Results) != want {
			t.Errorf("%d ranks: %d results, want %d", n, len(rep.Results), want)
		}
		for _, r := range rep.Results {
			if r.Op != "broadcast" || r.P50 <= 0 {
				t.Errorf("%d ranks: result %+v", n, r)
			}
		}
	}
}

// TestMsgRateSuite: the msgrate suite runs on both implementations at 2,
// 3 and 4 ranks, and its message rate is the pairs' messages per window
// over the mean time of a window.
func TestMsgRateSuite(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		rep, errs := runRanks(t, n, quickConfig("msgrate"))
		noErrors(t, errs)
		if rep == nil {
			t.Fatal("no report on rank 0")
		}
		if err := rep.Validate(); err != nil {
			t.Fatal(err)
		}
		if want := 2 * 3; len(rep.Results) != want {
			t.Errorf("%d ranks: %d results, want %d", n, len(rep.Results), want)
		}
		for _, r := range rep.Results {
			want := float64(bench.MsgRateWindow*(n/2)) / (r.Mean * 1e-6)
			if r.Op != "mbw_mr" || r.Error != "" || math.Abs(r.MsgRate-want) > 1e-6*want {
				t.Errorf("%d ranks: result %+v, want a message rate of %v", n, r, want)
			}
		}
	}
}

// TestDeadlineSuite: the deadline suite runs on boltmesh alone (stdnet
// has no deadline allreduce), at 2 and 3 ranks, every rank contributing
// and checking its result, one size past the eager limit.
func TestDeadlineSuite(t *testing.T) {
	boltmeshOnly(t, []string{"deadline"}, map[string]string{"deadline": "allreduce-deadline"})
}

// TestRootedSuites: the gather and scatter suites run on boltmesh alone,
// at 2 and 3 ranks, every rank checking what it received.
func TestRootedSuites(t *testing.T) {
	boltmeshOnly(t, []string{"gather", "scatter"}, map[string]string{"gather": "gather", "scatter": "scatter"})
}

// boltmeshOnly runs suites, whose op is ops[suite], at 8 B and 2 MiB on 2
// and 3 ranks, and checks that each ran once per size on boltmesh alone,
// its data checks passing.
func boltmeshOnly(t *testing.T, suites []string, ops map[string]string) {
	t.Helper()
	for _, n := range []int{2, 3} {
		cfg := quickConfig(suites...)
		cfg.Sizes = []int{8, 2 << 20}
		rep, errs := runRanks(t, n, cfg)
		noErrors(t, errs)
		if rep == nil {
			t.Fatal("no report on rank 0")
		}
		if err := rep.Validate(); err != nil {
			t.Fatal(err)
		}
		if want := 2 * len(suites); len(rep.Results) != want {
			t.Errorf("%d ranks: %d results, want %d", n, len(rep.Results), want)
		}
		for _, r := range rep.Results {
			if r.Op != ops[r.Suite] || r.Impl != bench.ImplBoltmesh || r.Error != "" || r.P50 <= 0 {
				t.Errorf("%d ranks: result %+v", n, r)
			}
		}
	}
}
