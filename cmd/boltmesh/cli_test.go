package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"bench", "rank", "profile"} {
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
		{[]string{"bench", "--transport", "carrier-pigeon"}, 2, "want tcp or thunderbolt"},
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
// thunderbolt: the Thunderbolt defaults (2 streams per pair) stripe a
// 2 MiB ping-pong, whose bytes the suite verifies, and the table names
// the transport.
func TestThunderboltCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks; skipped with -short")
	}
	stdout, stderr, err := cli(t, "bench", "--ranks", "2", "--suite", "p2p", "--sizes", "2M", "--iters", "3", "--baseline", "none", "--progress=false", "--transport", "thunderbolt")
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "thunderbolt") {
		t.Errorf("the table does not name the transport:\n%s", stdout)
	}
}

func TestParseFlagsInterleaved(t *testing.T) {
	var out, errb bytes.Buffer
	fs := newFlagSet("x", "", &out, &errb)
	top := fs.Int("top", 1, "")
	pos, err := parseFlags(fs, []string{"a", "--top", "5", "b"})
	if err != nil || *top != 5 || strings.Join(pos, ",") != "a,b" {
		t.Fatalf("got %v %d %v", pos, *top, err)
	}
}
