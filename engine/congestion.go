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
	// connections keep the system's. On loopback BBR's pacing spreads
	// every burst over timer ticks, which made allreduces slower than under
	// cubic, while between network namespaces over veth BBR was the faster,
	// so real links keep the system's choice (bench/RESULTS.md,
	// "Figures moved out of code comments", LoopbackCongestion).
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
func (o *Options) setCongestion(tc *net.TCPConn) error {
	name := o.Congestion
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
