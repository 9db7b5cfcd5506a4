package engine

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// LooksLikeThunderbolt reports whether ip is an address Thunderbolt
// bridges commonly use: IPv4 link-local (169.254.0.0/16, what macOS gives
// a Thunderbolt Bridge by default) or 10.0.0.0/8 (the usual static
// choice). It is advisory: plenty of other links use these ranges too;
// ThunderboltInterfaces asks the operating system instead.
func LooksLikeThunderbolt(ip net.IP) bool {
	ip4 := ip.To4()
	if ip4 == nil {
		return false
	}
	return ip4[0] == 169 && ip4[1] == 254 || ip4[0] == 10
}

// LinkInfo describes a network interface that carries Thunderbolt
// networking.
type LinkInfo struct {
	Name string // interface name, e.g. "thunderbolt0" or "bridge0"
	MTU  int
	Why  string // how it was recognised
}

// MinThunderboltMTU is the MTU below which a Thunderbolt link loses much of
// its bandwidth to per-packet costs.
const MinThunderboltMTU = 9000

// ThunderboltInterfaces lists the interfaces the operating system says
// are Thunderbolt networking: on Linux, those under /sys/class/net whose
// driver is thunderbolt-net or whose name starts with "thunderbolt"; on
// macOS, the Thunderbolt Bridge (bridge interfaces, "bridge0" by default).
// Elsewhere it returns none.
func ThunderboltInterfaces() ([]LinkInfo, error) {
	switch runtime.GOOS {
	case "linux":
		return sysfsThunderbolt("/sys/class/net")
	case "darwin":
		return darwinThunderbolt()
	}
	return nil, nil
}

// sysfsThunderbolt is ThunderboltInterfaces over a sysfs class directory.
func sysfsThunderbolt(root string) ([]LinkInfo, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("boltmesh: listing network interfaces: %w", err)
	}
	var out []LinkInfo
	for _, e := range ents {
		name := e.Name()
		why := ""
		if drv, err := os.Readlink(filepath.Join(root, name, "device", "driver")); err == nil && filepath.Base(drv) == "thunderbolt-net" {
			why = "driver thunderbolt-net"
		} else if strings.HasPrefix(name, "thunderbolt") {
			why = "name"
		}
		if why == "" {
			continue
		}
		mtu := 0
		if b, err := os.ReadFile(filepath.Join(root, name, "mtu")); err == nil {
			mtu, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		out = append(out, LinkInfo{Name: name, MTU: mtu, Why: why})
	}
	return out, nil
}

// darwinThunderbolt lists macOS bridge interfaces, which is what the
// Thunderbolt Bridge network service creates.
func darwinThunderbolt() ([]LinkInfo, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("boltmesh: listing network interfaces: %w", err)
	}
	var out []LinkInfo
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "bridge") {
			out = append(out, LinkInfo{Name: i.Name, MTU: i.MTU, Why: "Thunderbolt Bridge"})
		}
	}
	return out, nil
}

// MTUWarning returns advice for a Thunderbolt link whose MTU is below
// MinThunderboltMTU, or "" when it is fine. It is a warning, not an error:
// the link works, only slower.
func MTUWarning(l LinkInfo) string {
	if l.MTU <= 0 || l.MTU >= MinThunderboltMTU {
		return ""
	}
	how := "sudo ip link set dev " + l.Name + " mtu 9000"
	if runtime.GOOS == "darwin" {
		how = "sudo ifconfig " + l.Name + " mtu 9000 (or System Settings > Network > Thunderbolt Bridge > Details > Hardware > MTU: Jumbo)"
	}
	return fmt.Sprintf("boltmesh: Thunderbolt interface %s has MTU %d; %d moves far more per packet. Raise it on both ends: %s", l.Name, l.MTU, MinThunderboltMTU, how)
}

// ThunderboltTransport is the NetTransport tuned for Thunderbolt bridges
// (and other fast point-to-point links): several streams per pair with
// large messages striped across them, large socket buffers, TCP_NODELAY
// (as every boltmesh connection). Everything it sets is an Options field
// of the plain transport too; it only picks the defaults
// (ThunderboltOptions).
type ThunderboltTransport struct {
	*NetTransport
	// Links are the Thunderbolt interfaces the operating system reported
	// when the transport was built (see ThunderboltInterfaces).
	Links []LinkInfo
}

// Thunderbolt defaults. They are meant for real hosts joined by
// Thunderbolt and have not yet been measured on a Thunderbolt link: the
// only streams figures so far are from emulated one-core hosts, where more
// streams do not help (bench/RESULTS.md, "2026-11-29 22:00: star, streams,
// emulated hosts, RPC across processes").
const (
	// ThunderboltStreams is the default number of streams per pair.
	ThunderboltStreams = 2
	// ThunderboltStripeMin is the default striping threshold.
	ThunderboltStripeMin = 1 << 20
	// ThunderboltSocketBuffer is the default SO_SNDBUF and SO_RCVBUF.
	ThunderboltSocketBuffer = 4 << 20
)

// ThunderboltOptions returns opts with the Thunderbolt defaults in the
// fields left zero: Streams, StripeMin and SocketBuffer.
func ThunderboltOptions(opts Options) Options {
	if opts.Streams == 0 {
		opts.Streams = ThunderboltStreams
	}
	if opts.StripeMin == 0 {
		opts.StripeMin = ThunderboltStripeMin
	}
	if opts.SocketBuffer == 0 {
		opts.SocketBuffer = ThunderboltSocketBuffer
	}
	return opts
}

// BindThunderbolt is Bind with ThunderboltOptions, which also warns
// (through Options.Logger) about every Thunderbolt interface whose MTU is
// below MinThunderboltMTU, saying how to raise it.
func BindThunderbolt(rank, world int, peers []string, opts Options) (*ThunderboltTransport, error) {
	ln, err := listenAt(rank, peers)
	if err != nil {
		return nil, err
	}
	return ThunderboltFromListener(rank, world, ln, peers, opts)
}

// ThunderboltFromListener is FromListener with ThunderboltOptions and the
// MTU warnings of BindThunderbolt.
func ThunderboltFromListener(rank, world int, ln net.Listener, peers []string, opts Options) (*ThunderboltTransport, error) {
	links, _ := ThunderboltInterfaces()
	warnMTU(links, opts.Logger)
	t, err := FromListener(rank, world, ln, peers, ThunderboltOptions(opts))
	if err != nil {
		return nil, err
	}
	return &ThunderboltTransport{NetTransport: t, Links: links}, nil
}

// warnMTU logs MTUWarning for every link that needs one.
func warnMTU(links []LinkInfo, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	for _, l := range links {
		if w := MTUWarning(l); w != "" {
			log.Warn(w, "interface", l.Name, "mtu", l.MTU)
		}
	}
}
