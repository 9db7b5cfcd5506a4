//go:build linux

package shm

import (
	"crypto/rand"
	"encoding/hex"
	"net"
)

// Listen opens a Unix stream listener for neighbours on an abstract name,
// "@bm-" and 16 random hex digits: no file, gone with the listener. Where
// abstract names fail, it falls back to a socket in a fresh 0700 directory
// (see the other systems' Listen). Abstract names live in the network
// namespace: a neighbour in another one cannot Dial it (HostID differs
// there too), and they have no permission bits.
func Listen() (*Listener, error) {
	var b [8]byte
	rand.Read(b[:])
	name := "@bm-" + hex.EncodeToString(b[:])
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		return listenPath()
	}
	return &Listener{ln: ln, addr: name}, nil
}
