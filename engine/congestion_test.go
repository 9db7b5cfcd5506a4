package engine

import (
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/link/tcp"
	"github.com/boltmesh/boltmesh/internal/looptest"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) { return looptest.TCPPair(t) }

// procFirstLine returns a /proc file's first line, or skips the test.
func procFirstLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	return strings.TrimSpace(string(b))
}

func TestCongestionChoice(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("per-socket congestion control is checked on Linux")
	}
	avail := strings.Fields(procFirstLine(t, "/proc/sys/net/ipv4/tcp_available_congestion_control"))
	sys := procFirstLine(t, "/proc/sys/net/ipv4/tcp_congestion_control")
	want := map[string]string{"": sys, CongestionSystem: sys, "reno": "reno"}
	for _, a := range avail {
		if a == LoopbackCongestion {
			want[""] = LoopbackCongestion
		}
	}
	for opt, w := range want {
		tr := &NetTransport{opts: Options{Congestion: opt}}
		a, _ := tcpPair(t)
		if err := tr.opts.setCongestion(a); err != nil {
			t.Fatalf("Congestion %q: %v", opt, err)
		}
		got, err := tcp.CongestionOf(a)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("Congestion %q: the socket uses %q, want %q", opt, got, w)
		}
	}
}

func TestCongestionUnknown(t *testing.T) {
	tr := &NetTransport{opts: Options{Congestion: "no-such-cc"}}
	a, _ := tcpPair(t)
	if err := tr.opts.setCongestion(a); !errors.Is(err, ErrCongestion) {
		t.Fatalf("setCongestion(no-such-cc) = %v, want ErrCongestion", err)
	}
}

// TestCongestionUnknownMesh: a mesh whose sockets cannot take the named
// congestion control fails to form at once, on both ranks, with
// ErrCongestion.
func TestCongestionUnknownMesh(t *testing.T) {
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
		t.Cleanup(func() { ln.Close() })
	}
	opts := Options{Congestion: "no-such-cc", DialTimeout: 3 * time.Second}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := FromListener(r, 2, lns[r], addrs, opts)
			if err == nil {
				tr.Close()
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, ErrCongestion) {
			t.Errorf("rank %d: FromListener = %v, want ErrCongestion", r, err)
		}
	}
}
