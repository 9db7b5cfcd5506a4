package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// keygen runs "boltmesh keygen args..." in this process.
func keygen(args ...string) error { return cmdKeygen(args, io.Discard, io.Discard) }

// readKey returns file's content and mode.
func readKey(t *testing.T, file string) ([]byte, fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return b, fi.Mode().Perm()
}

// TestKeygen: keygen writes 32 random bytes, hex-encoded on one line, with
// mode 0600; it refuses to overwrite a file without --force, and with it
// writes a new key with mode 0600 whatever the old file's mode.
func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mesh.key")
	if err := keygen(file); err != nil {
		t.Fatal(err)
	}
	first, mode := readKey(t, file)
	k, err := hex.DecodeString(string(bytes.TrimSuffix(first, []byte("\n"))))
	if err != nil || len(k) != keyBytes || mode != 0o600 || first[len(first)-1] != '\n' {
		t.Fatalf("key file %q (mode %04o): %v", first, mode, err)
	}
	if got, err := readKeyFile(file); err != nil || !bytes.Equal(got, bytes.TrimSuffix(first, []byte("\n"))) {
		t.Fatalf("--key-file reads %q, %v", got, err)
	}
	if err := keygen(file); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("keygen over an existing file: %v", err)
	}
	if again, _ := readKey(t, file); !bytes.Equal(again, first) {
		t.Fatal("keygen without --force changed the file")
	}
	os.Chmod(file, 0o644)
	if err := keygen("--force", "-o", file); err != nil {
		t.Fatal(err)
	}
	if second, mode := readKey(t, file); bytes.Equal(second, first) || mode != 0o600 || len(second) != len(first) {
		t.Fatalf("after --force: %q, mode %04o", second, mode)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".boltmesh-key-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	for _, args := range [][]string{nil, {"a", "b"}, {"-o", "a", "b"}} {
		if err := keygen(args...); !errors.Is(err, errUsage) {
			t.Errorf("keygen %q: %v, want a usage error", args, err)
		}
	}
}

// TestKeyFileMode: --key-file refuses a file others may read or write,
// naming the flag.
func TestKeyFileMode(t *testing.T) {
	file := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(file, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for mode, ok := range map[fs.FileMode]bool{0o600: true, 0o400: true, 0o644: false, 0o640: false, 0o604: false, 0o620: false, 0o602: false} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		k, err := readKeyFile(file)
		var fe *flagError
		switch {
		case ok && (err != nil || string(k) != "secret"):
			t.Errorf("mode %04o: %q, %v", mode, k, err)
		case !ok && (!errors.As(err, &fe) || fe.Flag != "key-file"):
			t.Errorf("mode %04o: %v, want a --key-file error", mode, err)
		}
	}
}

// TestMeshKeyFromEnv: without --key-file the key comes from
// $BOLTMESH_KEY, so that the rendezvous and the stdnet baseline prove it
// as the engine does.
func TestMeshKeyFromEnv(t *testing.T) {
	t.Setenv("BOLTMESH_KEY", "from env")
	o, err := engineOptions(&meshFlags{timeout: 1}, membership{rank: 1, world: 2, source: "flags"})
	if err != nil || string(o.MeshKey) != "from env" {
		t.Fatalf("key %q, %v", o.MeshKey, err)
	}
}
