//go:build linux

package shm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

// roundTrip dials l, checks both ends' PeerCred and passes one message.
func roundTrip(t *testing.T, l *shm.Listener) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type acc struct {
		uid, pid int
		err      error
	}
	got := make(chan acc, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- acc{err: err}
			return
		}
		defer c.Close()
		uid, pid, err := shm.PeerCred(c)
		if err == nil {
			c.SetDeadline(time.Now().Add(20 * time.Second))
			err = shm.SendFDs(c, []byte("hi"))
		}
		got <- acc{uid, pid, err}
	}()
	c, err := shm.Dial(ctx, l.Addr())
	if err != nil {
		t.Fatalf("Dial(%q): %v", l.Addr(), err)
	}
	defer c.Close()
	if uid, pid, err := shm.PeerCred(c); err != nil || uid != os.Getuid() || pid != os.Getpid() {
		t.Fatalf("dialer's PeerCred = %d, %d, %v; want %d, %d", uid, pid, err, os.Getuid(), os.Getpid())
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 4)
	n, _, err := shm.RecvFDs(c, buf, 0)
	if err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("RecvFDs = %q, %v", buf[:n], err)
	}
	a := <-got
	if a.err != nil || a.uid != os.Getuid() || a.pid != os.Getpid() {
		t.Fatalf("acceptor's PeerCred = %d, %d, %v; want %d, %d", a.uid, a.pid, a.err, os.Getuid(), os.Getpid())
	}
}

func TestListenAbstract(t *testing.T) {
	l, err := shm.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^@bm-[0-9a-f]{16}$`).MatchString(l.Addr()) {
		t.Fatalf("Addr = %q, want @bm-<16 hex>", l.Addr())
	}
	roundTrip(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := shm.Dial(ctx, l.Addr()); err == nil {
		c.Close()
		t.Fatal("Dial after Close succeeded")
	}
}

func TestListenPath(t *testing.T) {
	l, err := shm.ListenPath()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(l.Addr())
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
		t.Fatalf("socket directory %q: %v, %v; want a 0700 directory", dir, st.Mode(), err)
	}
	if len(l.Addr()) >= len(unix.RawSockaddrUnix{}.Path) {
		t.Fatalf("Addr %q does not fit sun_path", l.Addr())
	}
	roundTrip(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket directory after Close: %v, want it gone", err)
	}
}

func TestSocketpair(t *testing.T) {
	a, b, err := shm.Socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(a)
	defer unix.Close(b)
	for _, fd := range []int{a, b} {
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Fatalf("fd %d: F_GETFD = %#x, %v; want FD_CLOEXEC", fd, flags, err)
		}
	}
	if _, err := unix.Write(a, []byte{7}); err != nil {
		t.Fatal(err)
	}
	var p [1]byte
	if n, err := unix.Read(b, p[:]); err != nil || n != 1 || p[0] != 7 {
		t.Fatalf("Read = %d, %v, %v", n, err, p)
	}
}
