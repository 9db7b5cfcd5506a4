package main

import (
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// freePort returns a loopback port nothing listens on, taken from
// just below the kernel's ephemeral range (ip_local_port_range) and
// above the Slurm rendezvous range: a port the kernel handed out for
// 127.0.0.1:0 can be handed again, between this call and the rank's
// bind, to a launcher's own listener (srun's message sockets took one
// in CI, and rank 0 failed with "address already in use").
func freePort(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	first := max(slurmPortBase+slurmPortSpan, 1024)
	if low-first >= 256 {
		for range 200 {
			port := first + rand.IntN(low-first)
			if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				ln.Close()
				return strconv.Itoa(port)
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestMpirun runs "mpirun -np 2 boltmesh bench --quick": the ranks find
// each other through OMPI_COMM_WORLD_* and the rendezvous.
func TestMpirun(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found: install OpenMPI (apt-get install openmpi-bin; .ci/run does) to run this test")
	}
	out := filepath.Join(t.TempDir(), "mpi.json")
	args := []string{"--oversubscribe", "-np", "2", "-x", cliEnv + "=1"}
	if os.Geteuid() == 0 {
		args = append([]string{"--allow-run-as-root"}, args...)
	}
	args = append(args, os.Args[0], "bench", "--quick", "--suite", "p2p,allreduce", "--rendezvous", "127.0.0.1:"+freePort(t), "--json", out)
	stdout, stderr, err := cliCmd(t, exec.Command(mpirun, args...))
	if err != nil {
		t.Fatalf("mpirun: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	rep := readReport(t, out)
	for _, r := range rep.Results {
		if r.Ranks != 2 {
			t.Errorf("%s %s: %d ranks, want 2", r.Impl, r.Key(), r.Ranks)
		}
	}
}
