// Package tcp is the TCP link kind: a connected socket tuned for boltmesh
// (no Nagle delay, no TCP keepalive: heartbeats watch the link; buffer
// sizes; congestion control) and taken from the net package as an
// ioloop.Stream.
package tcp

import (
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// Tune sets tc's options: TCP_NODELAY, no TCP keepalive, and, if buf is
// above 0, SO_SNDBUF and SO_RCVBUF of buf bytes (which turns the kernel's
// autotuning off).
func Tune(tc *net.TCPConn, buf int) {
	tc.SetNoDelay(true)
	tc.SetKeepAlive(false)
	if buf > 0 {
		tc.SetReadBuffer(buf)
		tc.SetWriteBuffer(buf)
	}
}

// Adopt takes nc, a connection whose handshake is done, for the event
// loop: its deadline cleared, a TCP socket tuned (Tune with buf, then
// tune, if not nil: its congestion control), and a duplicate of its
// descriptor returned as a Stream (Stream). nc stays the caller's to
// close.
func Adopt(nc net.Conn, buf int, tune func(*net.TCPConn) error) (ioloop.Stream, error) {
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		Tune(tc, buf)
		if tune != nil {
			if err := tune(tc); err != nil {
				return nil, err
			}
		}
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("tcp: connection from %s is a %T, not a socket the event loop can own", nc.RemoteAddr(), nc)
	}
	return Stream(sc)
}

// Stream returns a close-on-exec duplicate of sc's descriptor as an
// ioloop.Stream, in non-blocking mode; sc stays the caller's to close.
func Stream(sc syscall.Conn) (ioloop.Stream, error) {
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	err = raw.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	return ioloop.SocketStream(fd)
}

// SetCongestion sets tc's TCP congestion control to name.
func SetCongestion(tc *net.TCPConn, name string) error {
	return onFD(tc, func(fd int) error { return setFDCongestion(fd, name) })
}

// CongestionOf returns tc's TCP congestion control.
func CongestionOf(tc *net.TCPConn) (name string, err error) {
	err = onFD(tc, func(fd int) (err error) { name, err = fdCongestion(fd); return err })
	return name, err
}

// Probe reports whether a new TCP socket can take the congestion control
// name: nil, or why not.
func Probe(name string) error { return probeCongestion(name) }

// onFD runs f on tc's descriptor.
func onFD(tc *net.TCPConn, f func(fd int) error) error {
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
