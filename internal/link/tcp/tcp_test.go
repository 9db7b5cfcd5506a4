package tcp_test

import (
	"bytes"
	"net"
	"runtime"
	"testing"

	"github.com/boltmesh/boltmesh/internal/link/tcp"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"golang.org/x/sys/unix"
)

// pair returns the two ends of a loopback TCP connection, closed when
// the test ends.
func pair(t *testing.T) (*net.TCPConn, *net.TCPConn) { return looptest.TCPPair(t) }

// sockopt returns an int socket option of tc.
func sockopt(t *testing.T, tc *net.TCPConn, level, opt int) int {
	t.Helper()
	raw, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var verr error
	if err := raw.Control(func(fd uintptr) { v, verr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if verr != nil {
		t.Fatal(verr)
	}
	return v
}

// TestTune: no Nagle delay, no keepalive, the buffers asked for.
func TestTune(t *testing.T) {
	a, _ := pair(t)
	a.SetKeepAlive(true)
	tcp.Tune(a, 256<<10)
	if sockopt(t, a, unix.IPPROTO_TCP, unix.TCP_NODELAY) == 0 {
		t.Error("TCP_NODELAY is off")
	}
	if sockopt(t, a, unix.SOL_SOCKET, unix.SO_KEEPALIVE) != 0 {
		t.Error("SO_KEEPALIVE is on")
	}
	if n := sockopt(t, a, unix.SOL_SOCKET, unix.SO_RCVBUF); n < 256<<10 {
		t.Errorf("SO_RCVBUF is %d, want at least %d", n, 256<<10)
	}
}

// TestStream: the Stream reads and writes the connection's socket, and
// stays open when the net.Conn it came from is closed.
func TestStream(t *testing.T) {
	a, b := pair(t)
	s, err := tcp.Stream(a)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a.Close()
	msg := []byte("through the stream")
	if n, err := s.Writev([][]byte{msg[:7], msg[7:]}); n != len(msg) || err != nil {
		t.Fatalf("Writev: %d, %v", n, err)
	}
	got := make([]byte, len(msg))
	if _, err := b.Read(got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("the other end read %q, %v", got, err)
	}
	if _, err := b.Write(msg); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, len(msg))
	for n := 0; n < len(msg); {
		k, err := s.Read(got[n:], true)
		if err == unix.EAGAIN {
			runtime.Gosched()
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("Read %q, want %q", got, msg)
	}
}

// TestCongestion: a congestion control the kernel has takes effect on a
// socket and passes the probe; one it has not fails both.
func TestCongestion(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("per-socket TCP_CONGESTION is checked on Linux")
	}
	a, _ := pair(t)
	if err := tcp.Probe("reno"); err != nil {
		t.Fatalf("Probe(reno): %v", err)
	}
	if err := tcp.SetCongestion(a, "reno"); err != nil {
		t.Fatal(err)
	}
	if got, err := tcp.CongestionOf(a); err != nil || got != "reno" {
		t.Fatalf("CongestionOf: %q, %v, want reno", got, err)
	}
	if err := tcp.Probe("no-such-algorithm"); err == nil {
		t.Error("Probe(no-such-algorithm) succeeded")
	}
	if err := tcp.SetCongestion(a, "no-such-algorithm"); err == nil {
		t.Error("SetCongestion(no-such-algorithm) succeeded")
	}
}
