package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// cliEnv makes the test binary run as the boltmesh CLI, so that tests and
// the local ranks a bench run starts need no separate build.
const cliEnv = "BOLTMESH_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	if quickRun.dir != "" {
		os.RemoveAll(quickRun.dir)
	}
	os.Exit(code)
}

// cli runs the CLI in a child process with args and returns its output
// and exit error.
func cli(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return cliCmd(t, exec.Command(os.Args[0], args...))
}

// cliCmd runs cmd (this test binary, maybe under a launcher) as the CLI,
// with a watchdog; cmd.Env, if set, replaces this process's environment.
func cliCmd(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, cliEnv+"=1")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not finish in 60s; stderr:\n%s", cmd.Args, errb.String())
	}
	return out.String(), errb.String(), err
}

// quickRun is one "boltmesh bench --quick" run whose outputs several tests
// check; it runs once per test binary.
var quickRun struct {
	once           sync.Once
	dir            string
	stdout, stderr string
	err            error
}

// quick runs (once) boltmesh bench --quick with every output and a CPU
// profile, and returns the directory holding them.
func quick(t *testing.T) string {
	t.Helper()
	q := &quickRun
	q.once.Do(func() {
		q.dir, q.err = os.MkdirTemp("", "boltmesh-quick-")
		if q.err != nil {
			return
		}
		q.stdout, q.stderr, q.err = cli(t, "bench", "--quick",
			"--json", filepath.Join(q.dir, "out.json"), "--csv", filepath.Join(q.dir, "out.csv"),
			"--plot", filepath.Join(q.dir, "plots"), "--cpuprofile", filepath.Join(q.dir, "cpu.pprof"))
		if q.err != nil {
			q.err = fmt.Errorf("%w\nstdout:\n%s\nstderr:\n%s", q.err, q.stdout, q.stderr)
		}
	})
	if q.err != nil {
		t.Fatalf("boltmesh bench --quick: %v", q.err)
	}
	return q.dir
}
