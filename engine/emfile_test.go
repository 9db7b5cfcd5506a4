package engine_test

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/childproc"

	"github.com/boltmesh/boltmesh/engine"
)

// emfileLimit is the child's RLIMIT_NOFILE in TestAcceptSurvivesEMFILE:
// a few idle connections more than that exhaust its descriptors.
const emfileLimit = 64

// emfileMarker is the "emfile" child's log handler: the first record
// whose "err" is EMFILE makes it print "EMFILE" on w, for the parent.
type emfileMarker struct {
	once sync.Once
	w    *os.File
}

func (h *emfileMarker) Enabled(context.Context, slog.Level) bool { return true }
func (h *emfileMarker) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *emfileMarker) WithGroup(string) slog.Handler            { return h }
func (h *emfileMarker) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, syscall.EMFILE) {
			h.once.Do(func() { h.w.WriteString("EMFILE\n") })
		}
		return true
	})
	return nil
}

// runEmfileChild is the "emfile" role: rank 0 of 2 on the inherited
// listener, with at most emfileLimit descriptors; once rank 1 joined, a
// barrier.
func runEmfileChild(addrs []string, ln net.Listener) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	lim.Cur = emfileLimit
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	o := engine.Options{HandshakeTimeout: time.Minute, DialTimeout: time.Minute, Logger: slog.New(&emfileMarker{w: os.Stdout})}
	t, err := engine.FromListener(0, 2, ln, addrs, o)
	if err != nil {
		return err
	}
	defer t.Close()
	return t.Barrier()
}

// TestAcceptSurvivesEMFILE: idle connections exhaust a forming rank's
// file descriptors (a child process with RLIMIT_NOFILE lowered), so its
// Accept fails with EMFILE; once they are gone, the real rank 1 joins.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	lns, addrs := listeners(t, 2)
	lns[1].Close()
	cmd, err := childproc.Command(childproc.Spec{Role: "emfile", Rank: 0, Addrs: addrs, Listener: lns[0]})
	if err != nil {
		t.Fatal(err)
	}
	f := cmd.ExtraFiles[0]
	cmd.Stdout = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	exited := make(chan struct{}) // closed once the child is reaped, with its error in waitErr
	var waitErr error
	marker := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "EMFILE" {
				close(marker)
			}
		}
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	release := idleStrangers(t, addrs[:1], 2*emfileLimit)
	select {
	case <-marker:
	case <-exited:
		t.Fatalf("the child exited while strangers held its descriptors: %v", waitErr)
	case <-time.After(10 * time.Second):
		t.Error("the child never logged an EMFILE from Accept")
	}
	release()

	tr, err := engine.FromListener(1, 2, nil, addrs, engine.Options{DialTimeout: 20 * time.Second, Logger: discardLogger})
	if err != nil {
		t.Fatalf("rank 1 could not join rank 0 after its descriptors were freed: %v", err)
	}
	defer tr.Close()
	if err := tr.Barrier(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("rank 0 (child): %v", waitErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rank 0 (child) did not exit after the barrier")
	}
}
