package bench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mpiAnchor compiles bench/netns/src with mpicc, or skips the test
// saying why: the anchors need OpenMPI's compiler and headers and its
// mpirun, which .ci/run installs where it can.
func mpiAnchor(t *testing.T, src string) string {
	t.Helper()
	for _, tool := range []string{"mpicc", "mpirun"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on the PATH: the OpenMPI anchor is not checked", tool)
		}
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(src, ".c"))
	if out, err := exec.Command("mpicc", "-O2", "-o", bin, filepath.Join("netns", src)).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "mpi.h") {
			t.Skipf("mpicc has no mpi.h (install libopenmpi-dev): the OpenMPI anchor is not checked")
		}
		t.Fatalf("mpicc %s: %v\n%s", src, err, out)
	}
	return bin
}

// mpirun runs bin on n ranks over btl, as root too.
func mpirun(t *testing.T, n int, btl, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("mpirun", append([]string{"--oversubscribe", "--bind-to", "none", "-np", strconv.Itoa(n),
		"--mca", "btl", btl + ",self", "--mca", "btl_tcp_if_include", "lo", bin}, args...)...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun %s: %v\n%s", bin, err, out)
	}
	return string(out)
}

// TestMPIAllreduceAnchor: the allreduce anchor prints, per size asked,
// bytes, p50 µs, the bandwidths and p99 µs (at least p50).
func TestMPIAllreduceAnchor(t *testing.T) {
	bin := mpiAnchor(t, "mpi_allreduce.c")
	out := mpirun(t, 2, "tcp", bin, "8", "65536")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 5 {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want 2 lines of 5 fields, got:\n%s", out)
	}
	for i, want := range []string{"8", "65536"} {
		f := strings.Fields(lines[i])
		p50, err1 := strconv.ParseFloat(f[1], 64)
		p99, err2 := strconv.ParseFloat(f[4], 64)
		if f[0] != want || err1 != nil || err2 != nil || p50 <= 0 || p99 < p50 {
			t.Errorf("line %q: want %s bytes, 0 < p50 <= p99", lines[i], want)
		}
	}
}
