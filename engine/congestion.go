package engine

import (
	"errors"
	"fmt"
	"net"
)

// Congestion control choices for Options.Congestion.
const (
	// DefaultCongestion is the TCP congestion control boltmesh asks for
	// when Options.Congestion is empty. Measured on loopback with the
	// kernel's default set to BBR (2 ranks, float32 Sum allreduce,
	// 2026-11-29): BBR's pacing spreads every burst over timer ticks, and a
	// 16 MiB allreduce took 9.4-11.6 ms with BBR against 4.5-5.0 ms with
	// cubic (OpenMPI over the same loopback: 10.1-11.5 ms against 4.8-6.5
	// ms); at 1 MiB, one call in two took twice the usual time under BBR.
	// The links boltmesh is built for (loopback, Thunderbolt, a switch)
	// have no bottleneck queue for pacing to protect.
	DefaultCongestion = "cubic"
	// CongestionSystem keeps the kernel's default congestion control
	// (sysctl net.ipv4.tcp_congestion_control on Linux).
	CongestionSystem = "system"
)

// ErrCongestion means the congestion control that Options.Congestion names
// could not be set on a connection: the kernel does not have it, does not
// allow it (net.ipv4.tcp_allowed_congestion_control), or this system
// cannot choose one per socket (macOS).
var ErrCongestion = errors.New("boltmesh: congestion control not available")

// checkCongestion fails with ErrCongestion, before any connection is
// made, if no socket can take the congestion control that
// Options.Congestion names.
func checkCongestion(name string) error {
	if name == "" || name == CongestionSystem {
		return nil
	}
	if err := probeCongestion(name); err != nil {
		return fmt.Errorf("%w: Options.Congestion %q: %w", ErrCongestion, name, err)
	}
	return nil
}

// setCongestion applies Options.Congestion to a connection. The default is
// a preference: if the kernel refuses it, the connection keeps the
// system's. A name the caller chose must take effect.
func (t *NetTransport) setCongestion(tc *net.TCPConn) error {
	name := t.opts.Congestion
	switch name {
	case CongestionSystem:
		return nil
	case "":
		onFD(tc, func(fd int) error { return setFDCongestion(fd, DefaultCongestion) })
		return nil
	}
	if err := onFD(tc, func(fd int) error { return setFDCongestion(fd, name) }); err != nil {
		return fmt.Errorf("%w: %q on the connection with %s: %w", ErrCongestion, name, tc.RemoteAddr(), err)
	}
	return nil
}

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
