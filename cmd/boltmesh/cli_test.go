package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/link/sealed"
)

// TestHelp asks every subcommand for its help, which it prints and
// exits 0 without doing anything else (cores once ran a whole sitting).
func TestHelp(t *testing.T) {
	for cmd := range commands {
		for _, flag := range []string{"--help", "-h"} {
			var out, errb bytes.Buffer
			if code := run([]string{cmd, flag}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage: boltmesh "+cmd) {
				t.Errorf("%s %s: exit %d, output:\n%s%s", cmd, flag, code, out.String(), errb.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "boltmesh profile") {
		t.Errorf("--help: exit %d:\n%s", code, out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "Usage"},
		{[]string{"frob"}, 2, "unknown command"},
		{[]string{"bench", "--suite", "nope"}, 2, "unknown suite"},
		{[]string{"bench", "--sizes", "1Q"}, 2, "bad size"},
		{[]string{"bench", "--baseline", "mpi"}, 2, "want stdnet or none"},
		{[]string{"bench", "--transport", "carrier-pigeon"}, 2, "--transport carrier-pigeon: want auto, shm, tcp or thunderbolt"},
		{[]string{"bench", "--ranks", "1", "--coordinator", "256.0.0.1:1"}, 1, "--coordinator: listening at 256.0.0.1:1"},
		{[]string{"bench", "extra"}, 2, "unexpected argument"},
		{[]string{"rank"}, 2, "give --rank and --world"},
		{[]string{"rank", "--rank", "0", "--world", "2"}, 2, "rank 0 runs"},
		{[]string{"profile"}, 2, "exactly one profile"},
		{[]string{"profile", "/nonexistent.pprof"}, 1, "no such file"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.msg) {
			t.Errorf("%v: exit %d, want %d with %q; stderr:\n%s", c.args, code, c.code, c.msg, errb.String())
		}
	}
}

// TestThunderboltCLI runs a local 2-rank bench with --transport
// thunderbolt: shared memory stays on between ranks of one host, so the
// 2 MiB ping-pong, whose bytes the suite verifies, goes through it, and
// the table names what carried it.
func TestThunderboltCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks; skipped with -short")
	}
	stdout, stderr, err := cli(t, "bench", "--ranks", "2", "--suite", "p2p", "--sizes", "2M", "--iters", "3", "--baseline", "none", "--progress=false", "--transport", "thunderbolt")
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "transport: shared memory (rank 1 on this host); large messages: ") || !strings.Contains(stdout, "== p2p · 2 ranks · shm ==") {
		t.Errorf("the table does not name the transport:\n%s", stdout)
	}
}

// TestStripedTCPCLI runs a local 2-rank bench with --transport tcp and
// --streams 2: the pair stays on loopback TCP though it could share
// memory, and the 2 MiB messages (past StripeMin's default, 1 MiB) are
// striped over both streams, their bytes verified by the suite; the
// header, the table and the note name TCP.
func TestStripedTCPCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks; skipped with -short")
	}
	stdout, stderr, err := cli(t, "bench", "--ranks", "2", "--suite", "p2p", "--sizes", "2M", "--iters", "3", "--baseline", "none", "--progress=false", "--transport", "tcp", "--streams", "2")
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	for _, want := range []string{"transport: tcp; unsealed\n", "== p2p · 2 ranks · tcp ==", "TCP congestion control: boltmesh "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestSealedCLI runs a local 2-rank bench with --seal always over TCP,
// striped: its ranks (separate processes) seal their links, the suite
// verifies every byte, and the header and the JSON say which cipher; a
// bad --seal is refused before anything starts.
func TestSealedCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks; skipped with -short")
	}
	js := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr, err := cli(t, "bench", "--ranks", "2", "--suite", "p2p", "--sizes", "8,2M", "--iters", "3", "--baseline", "none", "--progress=false",
		"--transport", "tcp", "--streams", "2", "--seal", "always", "--json", js)
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	cipher := "transport: tcp; sealed (" + sealed.Preferred().String() + ")\n"
	if !strings.Contains(stdout, cipher) {
		t.Errorf("output lacks %q:\n%s", cipher, stdout)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"sealed": "sealed (` + sealed.Preferred().String() + `)"`; !strings.Contains(string(b), want) {
		t.Errorf("the JSON lacks %s:\n%s", want, b)
	}
	_, stderr, err = cli(t, "bench", "--ranks", "2", "--seal", "sometimes")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, "--seal") {
		t.Errorf("--seal sometimes: %v, stderr %q; want exit status 2 naming --seal", err, stderr)
	}
}

func TestParseFlagsInterleaved(t *testing.T) {
	var out bytes.Buffer
	fs := newFlagSet("x", "", &out)
	top := fs.Int("top", 1, "")
	pos, err := parseFlags(fs, []string{"a", "--top", "5", "b"})
	if err != nil || *top != 5 || strings.Join(pos, ",") != "a,b" {
		t.Fatalf("got %v %d %v", pos, *top, err)
	}
}

// carelessCase is a command line refused before anything starts, and the
// flag its error must name.
type carelessCase struct {
	args []string
	flag string
}

// carelessCases are the careless command lines of TestCarelessInput:
// every flag of bench, rank and profile given a value out of its range.
func carelessCases(t *testing.T) []carelessCase {
	dir := t.TempDir()
	openKey := filepath.Join(dir, "open.key")
	if err := os.WriteFile(openKey, []byte("k\n"), 0o600); err != nil || os.Chmod(openKey, 0o644) != nil {
		t.Fatal(err)
	}
	tooMany := strconv.Itoa(maxRanksPerCore*runtime.NumCPU() + 1)
	cases := []carelessCase{
		{[]string{"bench", "--ranks", tooMany}, "ranks"},
		{[]string{"bench", "--ranks", "0"}, "ranks"},
		{[]string{"bench", "--timeout", "0"}, "timeout"},
		{[]string{"bench", "--timeout", "-1s"}, "timeout"},
		{[]string{"bench", "--suite", ""}, "suite"},
		{[]string{"bench", "--suite", ","}, "suite"},
		{[]string{"bench", "--suite", "p2p,p2p"}, "suite"},
		{[]string{"bench", "--suite", "nope"}, "suite"},
		{[]string{"bench", "--rank", "0", "--world", "2", "--peers", "127.0.0.1:7000,127.0.0.1:7000"}, "peers"},
		{[]string{"bench", "--rank", "0", "--world", "2", "--peers", "a:7000,b:0"}, "peers"},
		{[]string{"bench", "--rank", "0", "--world", "2", "--peers", "a:7000,b"}, "peers"},
		{[]string{"bench", "--rank", "0", "--world", "2", "--peers", "a:1"}, "peers"},
		{[]string{"bench", "--heap", "0"}, "heap"},
		{[]string{"bench", "--heap", "-1M"}, "heap"},
		{[]string{"bench", "--heap", "1M", "--suite", "putget"}, "heap"},
		{[]string{"bench", "--streams", "17"}, "streams"},
		{[]string{"bench", "--streams", "-1"}, "streams"},
		{[]string{"bench", "--stripe-min", "0"}, "stripe-min"},
		{[]string{"bench", "--transport", "thunderbolt", "--stripe-min", "1"}, "stripe-min"},
		{[]string{"bench", "--socket-buffer", "-4M"}, "socket-buffer"},
		{[]string{"bench", "--sizes", "0"}, "sizes"},
		{[]string{"bench", "--sizes", "8,-1"}, "sizes"},
		{[]string{"bench", "--sizes", "2T"}, "sizes"},
		{[]string{"bench", "--iters", "-1"}, "iters"},
		{[]string{"bench", "--duration", "-1s"}, "duration"},
		{[]string{"bench", "--baseline", "mpi"}, "baseline"},
		{[]string{"bench", "--transport", "carrier-pigeon"}, "transport"},
		{[]string{"bench", "--transport", "shm", "--coordinator", "127.0.0.1:0"}, "transport"},
		{[]string{"rank", "--transport", "carrier-pigeon"}, "transport"},
		{[]string{"bench", "--bind", "nohost"}, "bind"},
		{[]string{"bench", "--rendezvous", "127.0.0.1:99999"}, "rendezvous"},
		{[]string{"bench", "--rank", "0", "--world", "2", "--rendezvous", "127.0.0.1:0"}, "rendezvous"},
		{[]string{"bench", "--coordinator", "x"}, "coordinator"},
		{[]string{"bench", "--key-file", openKey}, "key-file"},
		{[]string{"bench", "--key-file", filepath.Join(dir, "absent")}, "key-file"},
		{[]string{"bench", "--json", filepath.Join(dir, "absent", "out.json")}, "json"},
		{[]string{"bench", "--csv", dir}, "csv"},
		{[]string{"bench", "--plot", filepath.Join(openKey, "plots")}, "plot"},
		{[]string{"bench", "--cpuprofile", filepath.Join(dir, "absent", "cpu.pprof")}, "cpuprofile"},
		{[]string{"bench", "--memprofile", dir}, "memprofile"},
		{[]string{"bench", "--pprof", "nohost"}, "pprof"},
		{[]string{"rank", "--rank", "1", "--world", "2", "--blockprofile", filepath.Join(dir, "absent", "b")}, "blockprofile"},
		{[]string{"rank", "--rank", "1", "--world", "2", "--timeout", "0"}, "timeout"},
		{[]string{"rank", "--rank", "1", "--world", "2", "--streams", "99"}, "streams"},
		{[]string{"rank", "--rank", "1", "--world", "2", "--heap", "0"}, "heap"},
		{[]string{"rank", "--rank", "1", "--world", "2", "--key-file", openKey}, "key-file"},
		{[]string{"profile", "--top", "0", "cpu.pprof"}, "top"},
		{[]string{"profile", "--top", "-1", "cpu.pprof"}, "top"},
		{[]string{"profile", "--http", "nohost", "cpu.pprof"}, "http"},
	}
	if _, err := os.Stat("/proc/sys/net/ipv4/tcp_available_congestion_control"); err == nil {
		cases = append(cases, carelessCase{[]string{"bench", "--congestion", "no-such-algorithm"}, "congestion"})
	}
	// 2 ranks of 100 GiB heaps and 400 GiB of buffers.
	if mem := physicalMemory(); mem > 0 && mem < 2000<<30 {
		cases = append(cases, carelessCase{[]string{"bench", "--sizes", "100G"}, "sizes"})
	}
	return cases
}

// parseCommand parses (and checks) a command line as the command would,
// starting nothing.
func parseCommand(args []string) error {
	var err error
	switch args[0] {
	case "bench":
		_, err = parseBench(args[1:], io.Discard, io.Discard)
	case "rank":
		_, err = parseRank(args[1:], io.Discard, io.Discard)
	case "profile":
		err = cmdProfile(args[1:], io.Discard, io.Discard)
	}
	return err
}

// TestCarelessInput: each careless command line is refused before
// anything starts, with a usage error naming the flag.
func TestCarelessInput(t *testing.T) {
	for _, c := range carelessCases(t) {
		err := parseCommand(c.args)
		var fe *flagError
		if !errors.As(err, &fe) || fe.Flag != c.flag || !errors.Is(err, errUsage) {
			t.Errorf("%q: got %v, want an error naming --%s", c.args, err, c.flag)
		}
	}
	if err := parseCommand([]string{"bench", "--ranks", strconv.Itoa(maxRanksPerCore*runtime.NumCPU() + 1), "--force"}); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// TestCarelessInputCLI runs the binary on careless command lines that
// used to start ranks (or a run that failed late, or in a child): each
// exits with status 2 and one line on stderr naming the flag, having
// started nothing.
func TestCarelessInputCLI(t *testing.T) {
	// Without their checks most would start a short run: bounded, if
	// not refused.
	fast := []string{"bench", "--quick", "--suite", "barrier", "--baseline", "none", "--progress=false"}
	port := freePort(t)
	for _, c := range []carelessCase{
		{[]string{"bench", "--ranks", strconv.Itoa(maxRanksPerCore*runtime.NumCPU() + 1)}, "ranks"},
		{[]string{"bench", "--timeout", "0"}, "timeout"},
		{[]string{"bench", "--timeout", "-1s"}, "timeout"},
		{[]string{"bench", "--suite", ""}, "suite"},
		{[]string{"bench", "--heap", "0"}, "heap"},
		{[]string{"bench", "--streams", "17"}, "streams"},
		{[]string{"bench", "--rank", "0", "--world", "2", "--timeout", "3s", "--peers", "127.0.0.1:" + port + ",127.0.0.1:" + port}, "peers"},
		{[]string{"bench", "--ranks", "x"}, "ranks"},
	} {
		start := time.Now()
		stdout, stderr, err := cli(t, append(fast, c.args[1:]...)...)
		took := time.Since(start)
		var ee *exec.ExitError
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], "-"+c.flag) {
			t.Errorf("%q: %v after %v; stdout %q, stderr:\n%s", c.args, err, took, stdout, stderr)
		}
		t.Logf("%q: %v: %s", c.args, took.Round(time.Millisecond), lines[0])
	}
}

// TestCapacity: the rule for what a machine holds (2 cores, 8 GiB here),
// and the flag each refusal names.
func TestCapacity(t *testing.T) {
	m := machine{cores: 2, mem: 8 << 30}
	mf := &meshFlags{heap: "H"}
	bf := &benchFlags{ranks: 2, sizes: "S"}
	for _, c := range []struct {
		load  capacity
		force bool
		flag  string // "": allowed
	}{
		{capacity{ranks: 16, local: true, heap: 64 << 20, size: 16 << 20}, false, ""},
		{capacity{ranks: 17, local: true, heap: 64 << 20, size: 16 << 20}, false, "ranks"},
		{capacity{ranks: 17, local: true, heap: 64 << 20, size: 16 << 20}, true, ""},
		{capacity{ranks: 17, heap: 64 << 20, size: 16 << 20}, false, ""},                                  // launched: one rank here
		{capacity{ranks: 2, local: true, heap: 256 << 20, size: 256 << 20, sizesGiven: true}, false, ""},  // 2.5 GiB
		{capacity{ranks: 2, local: true, heap: 1 << 30, size: 1 << 30, sizesGiven: true}, false, "sizes"}, // 10 GiB
		{capacity{ranks: 2, local: true, heap: 3 << 30, size: 1 << 20, heapGiven: true}, false, "heap"},
		{capacity{ranks: 2, local: true, heap: 3 << 30, size: 1 << 20, heapGiven: true}, true, ""},
		{capacity{ranks: 16, local: true, heap: 64 << 20, size: 256 << 20}, false, "ranks"},
		{capacity{ranks: 1, heap: 5 << 30, heapGiven: true}, false, "heap"},
	} {
		mf.force = c.force
		err := c.load.check(m, mf, bf)
		var fe *flagError
		if c.flag == "" && err != nil || c.flag != "" && (!errors.As(err, &fe) || fe.Flag != c.flag) {
			t.Errorf("%+v (force %v): %v, want flag %q", c.load, c.force, err, c.flag)
		}
	}
	if err := (capacity{ranks: 2, local: true, heap: 1 << 40}).check(machine{cores: 2}, &meshFlags{}, bf); err != nil {
		t.Errorf("unknown memory: %v", err)
	}
}
