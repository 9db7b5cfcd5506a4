package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/driver"
)

func TestProfileBreakdown(t *testing.T) {
	file := filepath.Join(quick(t), "cpu.pprof")
	var out, errb bytes.Buffer
	if code := run([]string{"profile", file}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	for _, s := range []string{"top 15 functions", "where the time went:", catSyscall, catMemmove, catReduce, catRuntime, "by label op:"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	if !strings.Contains(text, "pingpong") && !strings.Contains(text, "allreduce") && !strings.Contains(text, "stream") {
		t.Errorf("no op label value in the breakdown")
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestProfileHTTP(t *testing.T) {
	file := filepath.Join(quick(t), "cpu.pprof")
	var handlers []string
	profileServer = func(a *driver.HTTPServerArgs) error {
		for h := range a.Handlers {
			handlers = append(handlers, h)
		}
		return nil
	}
	t.Cleanup(func() { profileServer = nil })
	var out, errb bytes.Buffer
	if code := run([]string{"profile", file, "--http", "127.0.0.1:0"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if len(handlers) == 0 {
		t.Fatal("pprof's web UI registered no handlers")
	}
}

func TestSysKind(t *testing.T) {
	for want, frames := range map[string][]string{
		"read":   {"internal/runtime/syscall/linux.Syscall6", "syscall.Syscall", "syscall.read"},
		"write":  {"syscall.Syscall", "golang.org/x/sys/unix.Writev"},
		"epoll":  {"runtime.epollwait", "runtime.netpoll"},
		"kevent": {"runtime.kevent"},
		"other":  {"syscall.Syscall", "main.main"},
	} {
		if got := sysKind(frames); got != want {
			t.Errorf("sysKind(%v) = %s, want %s", frames, got, want)
		}
	}
	for want, leaf := range map[string]string{
		catSyscall: "syscall.Syscall6",
		catMemmove: "runtime.memmove",
		catReduce:  "github.com/boltmesh/boltmesh/engine/collective.reduceFloat[go.shape.float32]",
		catRuntime: "runtime.findRunnable",
		catOther:   "github.com/boltmesh/boltmesh/engine.(*NetTransport).Send",
	} {
		if got := classify([]string{leaf}); got != want {
			t.Errorf("classify(%s) = %s, want %s", leaf, got, want)
		}
	}
}
