package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/c10d"
	"github.com/boltmesh/boltmesh/internal/c10d/c10dtest"
)

// torchrunBench is the short bench every rank of these tests runs.
var torchrunBench = []string{"bench", "--quick", "--suite", "barrier", "--progress=false"}

// TestTorchrunAgentStore runs "boltmesh bench" as 2 workers of
// testdata/torchrun_agent.py, which serves a real
// torch.distributed.TCPStore (python3-torch) on MASTER_PORT, as
// torchrun's agent does with its static rendezvous, and starts the
// workers with torchrun's environment (TORCHELASTIC_USE_AGENT_STORE=True
// among it). Debian's torchrun 1.13 entry point crashes on Python 3.11
// before it starts any worker, so this launcher is the faithful
// stand-in. Before the store rendezvous, rank 0 failed here with "bind:
// address already in use". Skips where torch is not importable.
func TestTorchrunAgentStore(t *testing.T) {
	py, err := c10dtest.TorchPython()
	if errors.Is(err, c10dtest.ErrNoTorch) {
		t.Skipf("%v; `make torch` installs it", err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	args := append([]string{"testdata/torchrun_agent.py", "--nproc-per-node", "2", "--run-id", "boltmesh-test",
		"--log-dir", dir, "--timeout", "50", "--", os.Args[0]}, torchrunBench...)
	stdout, stderr, err := cliCmd(t, exec.Command(py, append(args, "--json", out)...))
	logs := func(rank int) string {
		var b strings.Builder
		for _, f := range []string{"stdout.log", "stderr.log"} {
			s, _ := os.ReadFile(filepath.Join(dir, "attempt_0", fmt.Sprint(rank), f))
			fmt.Fprintf(&b, "rank %d %s:\n%s\n", rank, f, s)
		}
		return b.String()
	}
	if err != nil {
		t.Fatalf("torchrun_agent.py: %v\n%s%s\n%s%s", err, stdout, stderr, logs(0), logs(1))
	}
	for r := range 2 {
		if !strings.Contains(stdout, fmt.Sprintf("rank %d exit 0", r)) {
			t.Errorf("rank %d did not exit 0:\n%s\n%s", r, stdout, logs(r))
		}
	}
	table, _ := os.ReadFile(filepath.Join(dir, "attempt_0", "0", "stdout.log"))
	if !strings.Contains(string(table), "barrier · 2 ranks") {
		t.Errorf("rank 0 printed no barrier table:\n%s", logs(0))
	}
	rep := readReport(t, out)
	if len(rep.Results) == 0 {
		t.Fatal("no results in the report")
	}
	for _, r := range rep.Results {
		if r.Ranks != 2 {
			t.Errorf("%s %s: %d ranks, want 2", r.Impl, r.Key(), r.Ranks)
		}
	}
}

// TestStoreHoldsMasterPort runs 2 ranks with torchrun's environment while
// a TCPStore (c10dtest's fake, of each protocol) holds MASTER_PORT: with
// TORCHELASTIC_USE_AGENT_STORE=True, and without it (rank 0's listen
// fails with "address in use", and every rank finds the store there).
// Before the store rendezvous, rank 0 failed with "bind: address already
// in use". Each rank's entry is gone from the store afterwards. The case
// without a store checks that the JSON rendezvous still serves there.
func TestStoreHoldsMasterPort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks per case; skipped with -short")
	}
	for _, c := range []struct {
		name   string
		store  *c10dtest.Options
		forced bool
	}{
		{"agent store", &c10dtest.Options{}, true},
		{"detected store", &c10dtest.Options{}, false},
		{"validate store", &c10dtest.Options{Protocol: c10d.ProtocolValidate}, true},
		{"no store", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := freePort(t)
			var s *c10dtest.Server
			if c.store != nil {
				var err error
				if s, err = c10dtest.Start(*c.store); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				_, port, _ = strings.Cut(s.Addr(), ":")
			}
			env := []string{"WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port,
				"TORCHELASTIC_RUN_ID=test", "TORCHELASTIC_RESTART_COUNT=0"}
			if c.forced {
				env = append(env, "TORCHELASTIC_USE_AGENT_STORE=True")
			}
			outs, errs := runRanks(t, 2, env, torchrunBench...)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v\n%s", r, err, outs[r])
				}
			}
			if !strings.Contains(outs[0], "barrier · 2 ranks") {
				t.Errorf("rank 0 printed no barrier table:\n%s", outs[0])
			}
			if s != nil {
				for _, k := range s.Keys() {
					if strings.HasPrefix(k, "/boltmesh/") {
						t.Errorf("%s is still in the store", k)
					}
				}
			}
		})
	}
}

// runRanks runs the CLI with args as ranks 0..n-1 at once, each with
// env and RANK, LOCAL_RANK and LOCAL_WORLD_SIZE, and returns each one's
// output and exit error.
func runRanks(t *testing.T, n int, env []string, args ...string) ([]string, []error) {
	t.Helper()
	outs, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), cliEnv+"=1", fmt.Sprintf("RANK=%d", r), fmt.Sprintf("LOCAL_RANK=%d", r), fmt.Sprintf("LOCAL_WORLD_SIZE=%d", n))
		cmd.Env = append(cmd.Env, env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		wg.Go(func() {
			errs[r] = cmd.Wait()
			timer.Stop()
			outs[r] = out.String()
		})
	}
	wg.Wait()
	return outs, errs
}
