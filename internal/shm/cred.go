//go:build linux || darwin || freebsd || netbsd || openbsd

package shm

import "net"

// control runs f on c's descriptor and returns f's error, or the error of
// reaching the descriptor.
func control(c *net.UnixConn, f func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
