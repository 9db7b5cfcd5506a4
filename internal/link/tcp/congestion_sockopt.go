//go:build linux || freebsd

package tcp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setFDCongestion sets TCP_CONGESTION on a socket.
func setFDCongestion(fd int, name string) error {
	err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	switch err {
	case nil:
		return nil
	case unix.ENOENT:
		return fmt.Errorf("the kernel has no such algorithm (sysctl net.ipv4.tcp_available_congestion_control lists them): %w", err)
	case unix.EPERM:
		return fmt.Errorf("not allowed without CAP_NET_ADMIN (sysctl net.ipv4.tcp_allowed_congestion_control lists the allowed ones): %w", err)
	}
	return err
}

// fdCongestion returns a socket's TCP_CONGESTION.
func fdCongestion(fd int) (string, error) {
	return unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
}

// probeCongestion reports whether a new TCP socket can take the congestion
// control name.
func probeCongestion(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return setFDCongestion(fd, name)
}
