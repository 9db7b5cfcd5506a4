package admit_test

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/boltmesh/boltmesh/internal/admit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBadLine = errors.New("not a hello")

// hello is a handshake that wants the line "hello\n".
func hello(c net.Conn) (string, error) {
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "hello\n" {
		err = errBadLine
	}
	return line, err
}

// dial connects to ln and writes s (if not empty).
func dial(t *testing.T, ln net.Listener, s string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if s != "" {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestStrangersDoNotBlock: idle connections and garbage accepted before
// the good ones neither delay them nor end the loop; the garbage is
// reported. The handshake deadline is far beyond the test's, so a serial
// accept loop could not pass.
func TestStrangersDoNotBlock(t *testing.T) {
	ln := listen(t)
	for range 20 {
		dial(t, ln, "")
	}
	dial(t, ln, "garbage\n")
	var rejects []error
	var admitted []net.Conn
	errc := make(chan error, 1)
	go func() {
		errc <- admit.Serve(ln, admit.Options{Handshake: time.Hour, Deadline: time.Now().Add(time.Minute), OnReject: func(err error) { rejects = append(rejects, err) }},
			hello, func(c net.Conn, _ string) (bool, error) {
				admitted = append(admitted, c)
				return len(admitted) == 2, nil
			})
	}()
	time.Sleep(50 * time.Millisecond) // let the strangers be accepted first
	dial(t, ln, "hello\n")
	dial(t, ln, "hello\n")
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for _, c := range admitted {
		c.Close()
	}
	var re *admit.RejectError
	if len(rejects) != 1 || !errors.As(rejects[0], &re) || !errors.Is(re, errBadLine) {
		t.Fatalf("refusals %v, want one errBadLine", rejects)
	}
}

// TestDeadline: without enough good connections Serve ends at the
// deadline with the accept error and the last refusal.
func TestDeadline(t *testing.T) {
	ln := listen(t)
	dial(t, ln, "garbage\n")
	err := admit.Serve(ln, admit.Options{Deadline: time.Now().Add(300 * time.Millisecond)}, hello,
		func(net.Conn, string) (bool, error) { return true, nil })
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, errBadLine) {
		t.Fatalf("got %v, want a timeout joined with errBadLine", err)
	}
}

// TestBusy: beyond MaxPending handshakes, a connection is refused with
// ErrBusy at once (the refusal then closes the listener, which ends
// Serve).
func TestBusy(t *testing.T) {
	ln := listen(t)
	dial(t, ln, "")
	go func() {
		time.Sleep(100 * time.Millisecond)
		dial(t, ln, "")
	}()
	busy := false
	err := admit.Serve(ln, admit.Options{MaxPending: 1, Deadline: time.Now().Add(30 * time.Second), OnReject: func(err error) {
		busy = errors.Is(err, admit.ErrBusy)
		ln.Close()
	}}, hello, func(net.Conn, string) (bool, error) { return true, nil })
	if !busy || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("busy %v, Serve: %v", busy, err)
	}
}
