package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunKey: a local run without a key given makes a new one, as
// boltmesh keygen does, every run its own; a key given (--key-file, else
// $BOLTMESH_KEY) is used as it is; a rank placed by a launcher or the
// flags makes none.
func TestRunKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(file, []byte("from file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	local := membership{rank: 0, world: 2, source: "local"}
	launched := membership{rank: 1, world: 2, source: "openmpi"}
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == "BOLTMESH_KEY" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		file, env string
		m         membership
		want      string // "new": a new key
	}{
		{"", "", local, "new"},
		{"", "from env", local, "from env"},
		{file, "from env", local, "from file"},
		{"", "", launched, ""},
		{"", "from env", launched, "from env"},
		{file, "", launched, "from file"},
	} {
		k, err := runKey(c.file, c.m, env(c.env))
		switch {
		case err != nil:
			t.Errorf("%+v: %v", c, err)
		case c.want != "new" && string(k) != c.want:
			t.Errorf("%+v: key %q, want %q", c, k, c.want)
		case c.want == "new" && !isKeygenKey(k):
			t.Errorf("%+v: key %q, want %d random bytes in hex", c, k, keyBytes)
		}
	}
	a, _ := runKey("", local, env(""))
	b, _ := runKey("", local, env(""))
	if bytes.Equal(a, b) {
		t.Errorf("two local runs made the same key %q", a)
	}
}

// isKeygenKey reports whether k looks like a key of newKey's.
func isKeygenKey(k []byte) bool {
	b, err := hex.DecodeString(string(k))
	return err == nil && len(b) == keyBytes
}

// TestChildKey: the local ranks get rank 0's key in their environment,
// once, beside their share of the cores, and never on their command line;
// a --key-file given goes to them as the flag, as the key's only source.
func TestChildKey(t *testing.T) {
	restoreGOMAXPROCS(t)
	key := newKey()
	environ := []string{"HOME=/home/u", "BOLTMESH_KEY=", cliEnv + "=1"}
	for _, c := range []struct {
		name, keyFile, gomaxprocs string
		wantEnv                   []string
	}{
		{"made key, cores shared", "", "", []string{"HOME=/home/u", cliEnv + "=1", "GOMAXPROCS=" + strconv.Itoa(coreShare(2)), "BOLTMESH_KEY=" + string(key)}},
		{"made key, GOMAXPROCS given", "", "3", []string{"HOME=/home/u", cliEnv + "=1", "BOLTMESH_KEY=" + string(key)}},
		{"--key-file", "/keys/mesh.key", "3", environ},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", c.gomaxprocs)
			mf := &meshFlags{rendezvous: "127.0.0.1:7000", transport: transportAuto, timeout: time.Second, keyFile: c.keyFile}
			args := childArgs(1, 2, mf, &profFlags{}, []string{"rank"})
			for _, a := range args {
				if strings.Contains(a, string(key)) {
					t.Errorf("the key is on the command line: %q", args)
				}
			}
			if i := slices.Index(args, "--key-file"); c.keyFile != "" && (i < 0 || i+1 >= len(args) || args[i+1] != c.keyFile) {
				t.Errorf("command line %q lacks --key-file %s", args, c.keyFile)
			}
			if env := childEnv(environ, 2, mf, key); !slices.Equal(env, c.wantEnv) {
				t.Errorf("environment %q, want %q", env, c.wantEnv)
			}
		})
	}
}

// restoreGOMAXPROCS restores this process's GOMAXPROCS, which
// shareCores sets, at the end of the test.
func restoreGOMAXPROCS(t *testing.T) {
	n := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(n) })
}

// lockedBuffer is a bytes.Buffer that rank 0 and the copiers of its
// children's output may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// setHook sets a test hook for the rest of the test.
func setHook[F any](t *testing.T, hook *F, f F) {
	t.Helper()
	var zero F
	*hook = f
	t.Cleanup(func() { *hook = zero })
}

// TestLocalRunRefusesStranger: a process of this machine that dials the
// rendezvous of "boltmesh bench --ranks 2", no key given, as rank 1 is
// refused: the run made its own key, which the stranger lacks, and rank 0
// says so (errNoKeyProof); the run then completes with its own rank 1.
//
// Rank 0 runs in this process, its rank 1 as a child. The stranger
// connects as soon as rank 0's rendezvous listens, before rank 1 is even
// started, so its hello is the first rank 0 reads: without a key of the
// run's own it would take rank 1's slot.
func TestLocalRunRefusesStranger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks; skipped with -short")
	}
	t.Setenv(cliEnv, "1") // the rank this run starts is the CLI
	t.Setenv("BOLTMESH_KEY", "")
	restoreGOMAXPROCS(t)
	stranger := make(chan error, 1)
	setHook(t, &testHookLocalListen, func(ln net.Listener) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			stranger <- err
			return
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			_, err := exchangeHello(c, hello{Rank: 1, World: 2, Addr: "127.0.0.1:1"}, nil)
			stranger <- err
		}()
	})
	rejects := make(chan error, 16)
	setHook(t, &testHookRendezvousReject, func(err error) { rejects <- err })
	var stdout, stderr lockedBuffer
	code := run([]string{"bench", "--ranks", "2", "--suite", "p2p", "--sizes", "8", "--iters", "3", "--baseline", "none", "--progress=false", "--timeout", "10s"}, &stdout, &stderr)
	if err := <-stranger; !errors.Is(err, errRefused) {
		t.Errorf("the keyless stranger: %v, want errRefused", err)
	}
	select {
	case err := <-rejects:
		if !errors.Is(err, errNoKeyProof) || !errors.Is(err, errMeshKey) {
			t.Errorf("rank 0 refused the stranger with %v, want errNoKeyProof", err)
		}
	default:
		t.Error("rank 0 refused nobody")
	}
	if code != 0 || !strings.Contains(stdout.String(), "== p2p · 2 ranks") {
		t.Fatalf("the run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// keylessMark is in keylessWarning, once.
const keylessMark = "has NO MESH KEY"

// twoRanks runs ranks 0 and 1 of a 2-rank bench at once, each the CLI
// with args[r] in its environment plus env[r], and returns their stderr;
// it fails the test if either fails.
func twoRanks(t *testing.T, args, env [2][]string) [2]string {
	t.Helper()
	var stderr [2]string
	var errs [2]error
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], args[r]...)
			cmd.Env = append(os.Environ(), env[r]...)
			var stdout string
			stdout, stderr[r], errs[r] = cliCmd(t, cmd)
			if errs[r] != nil {
				errs[r] = fmt.Errorf("rank %d: %w\nstdout:\n%s\nstderr:\n%s", r, errs[r], stdout, stderr[r])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	return stderr
}

// TestKeylessWarning: every rank placed by a launcher's environment or by
// the flags without a key warns once, on loopback too; none does with a
// key, nor in a local run (which makes its own).
func TestKeylessWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks 5 times; skipped with -short")
	}
	t.Setenv("BOLTMESH_KEY", "")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := writeKey(keyFile, false); err != nil {
		t.Fatal(err)
	}
	fast := []string{"--suite", "p2p", "--sizes", "8", "--iters", "3", "--baseline", "none", "--progress=false", "--timeout", "20s"}
	peers := "127.0.0.1:" + freePort(t) + ",127.0.0.1:" + freePort(t)
	byFlags := func(more ...string) [2][]string {
		return [2][]string{
			append(append([]string{"bench", "--rank", "0", "--world", "2", "--peers", peers}, fast...), more...),
			append([]string{"rank", "--rank", "1", "--world", "2", "--peers", peers}, more...),
		}
	}
	rv := "BOLTMESH_RENDEZVOUS=127.0.0.1:" + freePort(t)
	mpi := func(more ...string) [2][]string {
		return [2][]string{
			append([]string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", rv}, more...),
			append([]string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", rv}, more...),
		}
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	inEnv := "BOLTMESH_KEY=" + strings.TrimSpace(string(key))
	bench := append([]string{"bench"}, fast...)
	for _, c := range []struct {
		name string
		args [2][]string
		env  [2][]string
		want int
	}{
		{"flags", byFlags(), [2][]string{}, 1},
		{"launcher", [2][]string{bench, bench}, mpi(), 1},
		{"flags, --key-file", byFlags("--key-file", keyFile), [2][]string{}, 0},
		{"launcher, BOLTMESH_KEY", [2][]string{bench, bench}, mpi(inEnv), 0},
	} {
		for r, stderr := range twoRanks(t, c.args, c.env) {
			if n := strings.Count(stderr, keylessMark); n != c.want {
				t.Errorf("%s: rank %d warned %d times, want %d; stderr:\n%s", c.name, r, n, c.want, stderr)
			}
		}
	}
	_, stderr, err := cli(t, append([]string{"bench", "--ranks", "2"}, fast...)...)
	if err != nil || strings.Contains(stderr, keylessMark) {
		t.Errorf("a local run: %v; stderr:\n%s", err, stderr)
	}
}
