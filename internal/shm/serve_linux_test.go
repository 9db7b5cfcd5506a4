//go:build linux

package shm_test

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/boltmesh/boltmesh/internal/shm"
)

// serveChild checks that the connection's peer is the child, sends it fd
// and waits for its "done".
func serveChild(t *testing.T, c *net.UnixConn, childPid, fd int) error {
	if uid, pid, err := shm.PeerCred(c); err != nil || uid != os.Getuid() || pid != childPid {
		return fmt.Errorf("PeerCred = %d, %d, %v; want %d, %d", uid, pid, err, os.Getuid(), childPid)
	}
	if err := shm.SendFDs(c, []byte("heap"), fd); err != nil {
		return err
	}
	buf := make([]byte, 8)
	n, _, err := shm.RecvFDs(c, buf, 0)
	if err != nil || string(buf[:n]) != "done" {
		return fmt.Errorf("child's answer %q, %v", buf[:n], err)
	}
	return nil
}
