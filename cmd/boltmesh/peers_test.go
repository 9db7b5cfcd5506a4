package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPeersAndKey runs a two-host style mesh on loopback: "boltmesh rank"
// as rank 1 and "boltmesh bench" as rank 0, both given --peers and the same
// --key-file, written by "boltmesh keygen".
func TestPeersAndKey(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if _, stderr, err := cli(t, "keygen", key); err != nil {
		t.Fatalf("keygen: %v\n%s", err, stderr)
	}
	peers := "127.0.0.1:" + freePort(t) + ",127.0.0.1:" + freePort(t)
	common := []string{"--world", "2", "--peers", peers, "--key-file", key}
	rank1 := exec.Command(os.Args[0], append([]string{"rank", "--rank", "1"}, common...)...)
	done := make(chan error, 1)
	go func() {
		_, stderr, err := cliCmd(t, rank1)
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, stderr)
		}
		done <- err
	}()
	out := filepath.Join(dir, "out.json")
	args := append([]string{"bench", "--rank", "0", "--quick", "--suite", "barrier,allreduce", "--sizes", "8,4K", "--json", out}, common...)
	stdout, stderr, err := cli(t, args...)
	if err != nil {
		t.Fatalf("rank 0: %v\n%s%s", err, stdout, stderr)
	}
	if err := <-done; err != nil {
		t.Fatalf("rank 1: %v", err)
	}
	if rep := readReport(t, out); len(rep.Results) != 6 {
		t.Errorf("%d results, want 6", len(rep.Results))
	}
	if !strings.Contains(stdout, "== barrier · 2 ranks") {
		t.Errorf("no barrier table:\n%s", stdout)
	}
}
