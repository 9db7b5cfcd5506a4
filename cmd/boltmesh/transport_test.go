package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
)

// TestLinksNames: the report's transport and the header bench prints,
// for each mix of neighbours and network links.
func TestLinksNames(t *testing.T) {
	if engine.SingleCopyMechanism == "" {
		t.Skip("no single copy on this system: the header says so for every case")
	}
	cma := engine.SingleCopyMechanism
	for _, c := range []struct {
		l          links
		name, line string
	}{
		{links{network: "tcp", shm: []int{1, 2, 3}, copy: []int{1, 2, 3}, copyMin: 256 << 10}, "shm", "transport: shared memory (ranks 1-3 on this host); large messages: " + cma + " from 256KiB"},
		{links{network: "tcp", shm: []int{1}}, "shm", "transport: shared memory (rank 1 on this host); large messages: rings (off)"},
		{links{network: "tcp", shm: []int{1, 2, 3}, copy: []int{2}, copyMin: 1 << 20}, "shm", "transport: shared memory (ranks 1-3 on this host); large messages: " + cma + " from 1MiB with rank 2, rings with ranks 1, 3 (refused by the kernel)"},
		{links{network: "tcp", shm: []int{1}, copyMin: 1 << 20}, "shm", "transport: shared memory (rank 1 on this host); large messages: rings (refused by the kernel)"},
		{links{network: "tcp", net: []int{1, 2, 3}}, "tcp", "transport: tcp; unsealed"},
		{links{network: "tcp", net: []int{1, 2, 3}, sealed: []int{1, 2, 3}, cipher: "aes-256-gcm"}, "tcp", "transport: tcp; sealed (aes-256-gcm)"},
		{links{network: "thunderbolt", net: []int{1}}, "thunderbolt", "transport: thunderbolt; unsealed"},
		{links{network: "tcp", shm: []int{1, 2}, net: []int{3}, copy: []int{1, 2}, copyMin: 256 << 10}, "shm+tcp", "transport: shared memory with ranks 1, 2; tcp with rank 3; large messages between neighbours: " + cma + " from 256KiB; unsealed"},
		{links{network: "thunderbolt", shm: []int{2}, net: []int{1, 3, 4, 5}, copyMin: -1, sealed: []int{3, 4}, cipher: "chacha20-poly1305"}, "shm+thunderbolt", "transport: shared memory with rank 2; thunderbolt with ranks 1, 3-5; large messages between neighbours: rings (off); sealed (chacha20-poly1305) with ranks 3, 4, unsealed with ranks 1, 5"},
		{links{network: "tcp", shm: []int{2}, net: []int{1, 3}, copyMin: -1, hosts: []int{0, 1, 0, 1}}, "shm+tcp", "transport: shared memory with rank 2; tcp with ranks 1, 3 (2 hosts of 2 ranks); large messages between neighbours: rings (off); unsealed"},
		{links{network: "tcp", shm: []int{1}, net: []int{2, 3, 4}, copyMin: -1, hosts: []int{0, 0, 1, 1, 2}}, "shm+tcp", "transport: shared memory with rank 1; tcp with ranks 2-4 (3 hosts of 2, 2, 1 ranks); large messages between neighbours: rings (off); unsealed"},
		{links{network: "tcp"}, "tcp", "transport: tcp"},
	} {
		if got := c.l.name(); got != c.name {
			t.Errorf("%+v: name %q, want %q", c.l, got, c.name)
		}
		if got := c.l.line(); got != c.line {
			t.Errorf("%+v: line %q, want %q", c.l, got, c.line)
		}
	}
}

// TestLinksRequire: --transport shm's check names the ranks on this host
// that are not neighbours.
func TestLinksRequire(t *testing.T) {
	l := links{network: "tcp", shm: []int{2}, net: []int{1, 3}}
	if err := l.require([]int{2}); err != nil {
		t.Fatalf("every local rank is a neighbour: %v", err)
	}
	err := l.require([]int{1, 2, 3})
	var se *sharedMemoryError
	if !errors.Is(err, errNoSharedMemory) || !errors.As(err, &se) || !slices.Equal(se.Ranks, []int{1, 3}) {
		t.Fatalf("got %v, want a *sharedMemoryError naming ranks 1 and 3", err)
	}
}

// TestSameHost: the ranks whose addresses are this machine's.
func TestSameHost(t *testing.T) {
	got := sameHost([]string{"127.0.0.1:1", "192.0.2.1:2", "localhost:3", "[::1]:4", "nonsense"}, 0)
	if !slices.Equal(got, []int{2, 3}) {
		t.Errorf("got %v, want [2 3]", got)
	}
}

// benchTransport runs a local 2-rank p2p bench with extra flags and
// returns its stdout and the transport of every boltmesh result in its
// JSON report and CSV.
func benchTransport(t *testing.T, extra ...string) (stdout string, transports []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts 2 ranks; skipped with -short")
	}
	dir := t.TempDir()
	js, cs := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.csv")
	args := append([]string{"bench", "--quick", "--suite", "p2p", "--sizes", "8,64K", "--progress=false", "--json", js, "--csv", cs}, extra...)
	stdout, stderr, err := cli(t, args...)
	if err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout, stderr)
	}
	for _, r := range readReport(t, js).Results {
		if r.Impl == bench.ImplBoltmesh {
			transports = append(transports, "json "+r.Transport)
		}
	}
	f, err := os.Open(cs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("CSV: %d rows, %v", len(rows), err)
	}
	impl, tr := slices.Index(rows[0], "impl"), slices.Index(rows[0], "transport")
	for _, row := range rows[1:] {
		if row[impl] == bench.ImplBoltmesh {
			transports = append(transports, "csv "+row[tr])
		}
	}
	return stdout, transports
}

// checkTransports fails t unless every one of got names want.
func checkTransports(t *testing.T, got []string, want string) {
	t.Helper()
	if len(got) == 0 {
		t.Fatal("no boltmesh results")
	}
	for _, g := range got {
		if _, tr, _ := strings.Cut(g, " "); tr != want {
			t.Errorf("%s: transport %q, want %q", g, tr, want)
		}
	}
}

// TestBenchTransportDefault: by default two local ranks meet over shared
// memory, and the report and the header say so.
func TestBenchTransportDefault(t *testing.T) {
	stdout, got := benchTransport(t)
	checkTransports(t, got, "shm")
	if !strings.Contains(stdout, "transport: shared memory (rank 1 on this host); large messages: ") || !strings.Contains(stdout, "== p2p · 2 ranks · shm ==") {
		t.Errorf("the header does not say shared memory:\n%s", stdout)
	}
}

// TestBenchTransportTCP: --transport tcp keeps local ranks on loopback
// TCP.
func TestBenchTransportTCP(t *testing.T) {
	stdout, got := benchTransport(t, "--transport", "tcp")
	checkTransports(t, got, "tcp")
	if !strings.Contains(stdout, "transport: tcp; unsealed\n") || strings.Contains(stdout, "shared memory") {
		t.Errorf("the header does not say tcp:\n%s", stdout)
	}
}

// TestBenchTransportShmRefused: with --transport shm, rank 0 refuses a
// mesh in which a rank on its host (here rank 1, told it is on another
// host by BOLTMESH_HOST_ID) is not reached over shared memory; with auto
// the same mesh runs, over TCP.
func TestBenchTransportShmRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks; skipped with -short")
	}
	for _, transport := range []string{"shm", "auto"} {
		peers := "127.0.0.1:" + freePort(t) + ",127.0.0.1:" + freePort(t)
		common := []string{"--world", "2", "--peers", peers, "--transport", transport, "--timeout", "10s"}
		rank1 := exec.Command(os.Args[0], append([]string{"rank", "--rank", "1"}, common...)...)
		rank1.Env = append(os.Environ(), "BOLTMESH_HOST_ID=rank1-host")
		done := make(chan error, 1)
		go func() {
			_, stderr, err := cliCmd(t, rank1)
			done <- fmt.Errorf("%w\n%s", err, stderr)
		}()
		rank0 := exec.Command(os.Args[0], append([]string{"bench", "--rank", "0", "--quick", "--suite", "barrier", "--baseline", "none", "--progress=false"}, common...)...)
		rank0.Env = append(os.Environ(), "BOLTMESH_HOST_ID=rank0-host")
		stdout, stderr, err := cliCmd(t, rank0)
		rank1Err := <-done
		var ee *exec.ExitError
		switch {
		case transport == "auto" && (err != nil || !strings.Contains(stdout, "transport: tcp; unsealed\n")):
			t.Errorf("auto: %v\nstdout:\n%s\nstderr:\n%s\nrank 1: %v", err, stdout, stderr, rank1Err)
		case transport == "shm" && (!errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr, errNoSharedMemory.Error()+": rank 1 ")):
			t.Errorf("shm: %v, want exit status 1 naming rank 1; stdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
	}
}
