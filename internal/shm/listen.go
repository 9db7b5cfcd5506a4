//go:build linux || darwin || freebsd || netbsd || openbsd

package shm

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Listener is a Unix stream listener for neighbours, made by Listen.
// Anyone who can reach its address can connect: authenticate what Accept
// returns before trusting it.
type Listener struct {
	ln   *net.UnixListener
	addr string
	dir  string // the 0700 directory holding the socket; "" for an abstract name
}

// Addr returns the address a neighbour passes to Dial: "@bm-<16 hex>" for
// a Linux abstract name, else the socket's path.
func (l *Listener) Addr() string { return l.addr }

// Accept waits for a neighbour to connect and returns the connection.
// Close makes a waiting Accept return an error.
func (l *Listener) Accept() (*net.UnixConn, error) { return l.ln.AcceptUnix() }

// Close stops the listener and removes its socket file and directory (if
// it has them). Connections already accepted stay open.
func (l *Listener) Close() error {
	err := l.ln.Close()
	if l.dir != "" {
		err = errors.Join(err, os.RemoveAll(l.dir))
	}
	return err
}

// Dial connects to a neighbour's Listener at addr (its Addr), giving up
// when ctx is done.
func Dial(ctx context.Context, addr string) (*net.UnixConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// sunPathLen is the size of sockaddr_un's sun_path here (108 on Linux, 104
// on darwin and the BSDs); a path must be shorter, leaving room for a NUL.
var sunPathLen = len(unix.RawSockaddrUnix{}.Path)

// listenPath listens on a socket "s" in a fresh 0700 directory from
// os.MkdirTemp, in os.TempDir, or in /tmp when that path would be too long
// for sun_path (macOS's $TMPDIR is about 50 bytes).
func listenPath() (*Listener, error) {
	var err error
	for _, parent := range []string{"", "/tmp"} {
		var l *Listener
		if l, err = listenIn(parent); err == nil {
			return l, nil
		}
	}
	return nil, err
}

// listenIn is listenPath in one parent directory ("" for os.TempDir).
func listenIn(parent string) (*Listener, error) {
	dir, err := os.MkdirTemp(parent, "bm")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "s")
	if len(path) >= sunPathLen {
		os.Remove(dir)
		return nil, &net.OpError{Op: "listen", Net: "unix", Addr: &net.UnixAddr{Name: path, Net: "unix"}, Err: os.NewSyscallError("bind", unix.ENAMETOOLONG)}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &Listener{ln: ln, addr: path, dir: dir}, nil
}
