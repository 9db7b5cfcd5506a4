//go:build netbsd || openbsd

package shm

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// PeerCred is not implemented on netbsd and openbsd: it returns an error
// wrapping errors.ErrUnsupported, and callers fall back to TCP.
func PeerCred(c *net.UnixConn) (uid, pid int, err error) {
	return -1, -1, fmt.Errorf("shm: PeerCred on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
