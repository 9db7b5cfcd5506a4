//go:build linux || freebsd

package engine

import "golang.org/x/sys/unix"

// setFDCongestion sets TCP_CONGESTION on a socket.
func setFDCongestion(fd int, name string) error {
	return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
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
