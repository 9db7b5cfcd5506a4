//go:build linux

package shm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/boltmesh/boltmesh/internal/childproc"
	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

// childSize is the object the parent passes to the "mapwrite" child.
const childSize = 64 << 10

// runChild runs a child role: "mapwrite" dials the parent at Addrs[0],
// receives one object, checks that it is sealed and that its parent is at
// the other end, maps it, writes pattern(0x5c, i) over it and says "done".
func runChild(c childproc.Child) error {
	if c.Role != "mapwrite" {
		return fmt.Errorf("unknown role %q", c.Role)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := shm.Dial(ctx, c.Addrs[0])
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if uid, pid, err := shm.PeerCred(conn); err != nil || uid != os.Getuid() || pid != os.Getppid() {
		return fmt.Errorf("PeerCred = %d, %d, %v; want %d, %d", uid, pid, err, os.Getuid(), os.Getppid())
	}
	buf := make([]byte, 16)
	n, fds, err := shm.RecvFDs(conn, buf, 1)
	if err != nil || string(buf[:n]) != "heap" || len(fds) != 1 {
		return fmt.Errorf("RecvFDs = %q, %v, %v", buf[:n], fds, err)
	}
	fd := fds[0]
	if err := shm.Check(fd, childSize); err != nil {
		return err
	}
	if err := unix.Ftruncate(fd, childSize/2); !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("ftruncate by the receiver = %v, want EPERM", err)
	}
	mem, err := shm.Map(fd, childSize)
	if err != nil {
		return err
	}
	unix.Close(fd) // the mapping keeps the object
	shm.Prefault(mem)
	for i := range mem {
		mem[i] = pattern(0x5c, i)
	}
	if err := shm.Unmap(mem); err != nil {
		return err
	}
	return shm.SendFDs(conn, []byte("done"))
}
