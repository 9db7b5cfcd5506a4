package engine

import (
	"fmt"
	"net"

	"github.com/boltmesh/boltmesh/internal/link/tcp"
)

// Congestion control choices for Options.Congestion.
const (
	// LoopbackCongestion is the TCP congestion control boltmesh asks for
	// on loopback connections when Options.Congestion is empty; other
	// connections keep the system's. Measured on this project's 2-core VM,
	// whose kernel default is BBR (2 ranks, float32 Sum allreduce,
	// 2026-11-29): on loopback BBR's pacing spreads every burst over timer
	// ticks, and a 16 MiB allreduce took 9.4-11.6 ms with BBR against
	// 4.5-5.0 ms with cubic (OpenMPI on the same loopback: 10.1-11.5 ms
	// against 4.8-6.5 ms), while one 1 MiB call in two took twice the usual
	// time. Between network namespaces joined by veth (MTU 9000), the
	// opposite: the 16 MiB allreduce's busbw was 1.34-1.37 GB/s with BBR
	// and 0.88-0.99 with cubic, and sends swung from 0.76 to 5.2 GB/s, so
	// real links keep the system's choice.
	LoopbackCongestion = "cubic"
	// CongestionSystem keeps the kernel's default congestion control
	// (sysctl net.ipv4.tcp_congestion_control on Linux) on every
	// connection, loopback included.
	CongestionSystem = "system"
)

// checkCongestion fails with ErrCongestion, before any connection is
// made, if no socket can take the congestion control that
// Options.Congestion names.
func checkCongestion(name string) error {
	if name == "" || name == CongestionSystem {
		return nil
	}
	if err := tcp.Probe(name); err != nil {
		return fmt.Errorf("%w: Options.Congestion %q: %w", ErrCongestion, name, err)
	}
	return nil
}

// setCongestion applies Options.Congestion to a connection. The default is
// a preference, for loopback connections only: if the kernel refuses it,
// the connection keeps the system's. A name the caller chose must take
// effect.
func (t *NetTransport) setCongestion(tc *net.TCPConn) error {
	name := t.opts.Congestion
	switch name {
	case CongestionSystem:
		return nil
	case "":
		if isLoopback(tc.RemoteAddr().String()) {
			tcp.SetCongestion(tc, LoopbackCongestion)
		}
		return nil
	}
	if err := tcp.SetCongestion(tc, name); err != nil {
		return fmt.Errorf("%w: %q on the connection with %s: %w", ErrCongestion, name, tc.RemoteAddr(), err)
	}
	return nil
}
