package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/internal/c10d/c10dtest"
)

// readTrainReport reads a boltmesh-train/v1 file.
func readTrainReport(t *testing.T, file string) *trainReport {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rep trainReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if rep.Schema != trainSchema {
		t.Fatalf("%s: schema %q", file, rep.Schema)
	}
	return &rep
}

// TestTrainQuickJSON: "boltmesh train --quick --ranks 2" trains 2 epochs
// on 2 local ranks, both contributing to every step, and writes the
// per-epoch records and the charts.
func TestTrainQuickJSON(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "train.json")
	stdout, stderr, err := cli(t, "train", "--quick", "--ranks", "2", "--json", out, "--plot", filepath.Join(dir, "plots"))
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	rep := readTrainReport(t, out)
	if rep.World != 2 || len(rep.Epochs) != quickEpochs || len(rep.Ranks) != 2 {
		t.Fatalf("world %d, %d epochs, %d ranks", rep.World, len(rep.Epochs), len(rep.Ranks))
	}
	for _, ep := range rep.Epochs {
		if !(ep.Loss > 0) || !(ep.TestAccuracy > 0.5 && ep.TestAccuracy <= 1) || !(ep.ComputeS > 0) || !(ep.CommS > 0) || ep.Steps != quickSamples/64 {
			t.Errorf("epoch %+v", ep)
		}
	}
	if last, first := rep.Epochs[len(rep.Epochs)-1], rep.Epochs[0]; !(last.Loss < first.Loss) {
		t.Errorf("loss went from %v to %v", first.Loss, last.Loss)
	}
	for _, r := range rep.Ranks {
		if r.Contributed != r.Steps || r.Steps != quickEpochs*quickSamples/64 || r.TestAccuracy != rep.Epochs[len(rep.Epochs)-1].TestAccuracy {
			t.Errorf("rank %+v", r)
		}
	}
	for _, s := range []string{"transport: shared memory (rank 1 on this host); large messages: ", "epoch 1  loss", "test accuracy", "compute", "comm"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	for _, f := range []string{"train-loss.svg", "train-accuracy.svg"} {
		checkSVG(t, filepath.Join(dir, "plots", f))
	}
}

// checkSVG checks that file is well-formed XML with an svg root.
func checkSVG(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var root struct{ XMLName xml.Name }
	if err := xml.NewDecoder(f).Decode(&root); err != nil || root.XMLName.Local != "svg" {
		t.Errorf("%s: root %v, %v", file, root.XMLName, err)
	}
}

// TestTrainStraggler: with --deadline, a --straggler far past it is left
// out of the steps, the others go on, and every rank ends with the same
// accuracy (the same weights).
func TestTrainStraggler(t *testing.T) {
	out := filepath.Join(t.TempDir(), "train.json")
	stdout, stderr, err := cli(t, "train", "--quick", "--samples", "640", "--epochs", "1", "--check-every", "4",
		"--deadline", "1ms", "--straggler", "1:100ms", "--json", out)
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	rep := readTrainReport(t, out)
	if len(rep.Ranks) != 2 {
		t.Fatalf("%d ranks", len(rep.Ranks))
	}
	on, late := rep.Ranks[0], rep.Ranks[1]
	if on.Contributed != on.Steps || late.Contributed >= late.Steps || late.TestAccuracy != on.TestAccuracy {
		t.Errorf("rank 0 %+v, straggler %+v", on, late)
	}
}

// TestTrainFlagErrors: bad training flags are usage errors naming the
// flag, before anything starts.
func TestTrainFlagErrors(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"--straggler", "1"}},
		{[]string{"--straggler", "5:1ms"}},
		{[]string{"--straggler", "0:1ms", "--deadline", "1ms"}},
		{[]string{"--batch", "0"}},
		{[]string{"--lr", "-1"}},
		{[]string{"--epochs", "0"}},
	} {
		_, err := parseTrain(c.args, io.Discard, io.Discard)
		var fe *flagError
		if !errors.As(err, &fe) || !errors.Is(err, errUsage) || fe.Flag != strings.TrimPrefix(c.args[0], "--") {
			t.Errorf("%v: %v, want a flag error on %s", c.args, err, c.args[0])
		}
	}
}

// TestTrainMpirun runs "mpirun -np 2 boltmesh train --quick": every rank
// trains under the launcher's environment and rank 0 reports both.
func TestTrainMpirun(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found: install OpenMPI (apt-get install openmpi-bin; .ci/run does) to run this test")
	}
	out := filepath.Join(t.TempDir(), "train.json")
	args := []string{"--oversubscribe", "-np", "2", "-x", cliEnv + "=1"}
	if os.Geteuid() == 0 {
		args = append([]string{"--allow-run-as-root"}, args...)
	}
	args = append(args, os.Args[0], "train", "--quick", "--samples", "1024", "--epochs", "1", "--rendezvous", "127.0.0.1:"+freePort(t), "--json", out)
	stdout, stderr, err := cliCmd(t, exec.Command(mpirun, args...))
	if err != nil {
		t.Fatalf("mpirun: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	rep := readTrainReport(t, out)
	if rep.World != 2 || len(rep.Ranks) != 2 || rep.Ranks[1].Contributed != rep.Ranks[1].Steps {
		t.Errorf("world %d, ranks %+v", rep.World, rep.Ranks)
	}
}

// TestTrainTorchrunAgentStore runs "boltmesh train" as 2 workers of
// testdata/torchrun_agent.py (a real torch.distributed.TCPStore on
// MASTER_PORT and torchrun's environment: see TestTorchrunAgentStore).
// Skips where torch is not importable.
func TestTrainTorchrunAgentStore(t *testing.T) {
	py, err := c10dtest.TorchPython()
	if errors.Is(err, c10dtest.ErrNoTorch) {
		t.Skipf("%v; `make torch` installs it", err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "train.json")
	args := []string{"testdata/torchrun_agent.py", "--nproc-per-node", "2", "--run-id", "boltmesh-train-test",
		"--log-dir", dir, "--timeout", "50", "--", os.Args[0],
		"train", "--quick", "--samples", "1024", "--epochs", "1", "--progress=false", "--json", out}
	stdout, stderr, err := cliCmd(t, exec.Command(py, args...))
	if err != nil {
		log0, _ := os.ReadFile(filepath.Join(dir, "attempt_0", "0", "stderr.log"))
		t.Fatalf("torchrun_agent.py: %v\n%s%s\nrank 0:\n%s", err, stdout, stderr, log0)
	}
	rep := readTrainReport(t, out)
	if rep.World != 2 || len(rep.Ranks) != 2 || rep.Ranks[1].Contributed != rep.Ranks[1].Steps {
		t.Errorf("world %d, ranks %+v", rep.World, rep.Ranks)
	}
}
