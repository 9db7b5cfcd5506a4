package thunderbolt

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// LooksLike reports whether ip is an address Thunderbolt
// bridges commonly use: IPv4 link-local (169.254.0.0/16, what macOS gives
// a Thunderbolt Bridge by default) or 10.0.0.0/8 (the usual static
// choice). It is advisory: plenty of other links use these ranges too;
// Interfaces asks the operating system instead.
func LooksLike(ip net.IP) bool {
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

// MinMTU is the MTU below which a Thunderbolt link loses much of
// its bandwidth to per-packet costs.
const MinMTU = 9000

// Interfaces lists the interfaces the operating system says
// are Thunderbolt networking: on Linux, those under /sys/class/net whose
// driver is thunderbolt-net or whose name starts with "thunderbolt"; on
// macOS, the Thunderbolt Bridge (bridge interfaces, "bridge0" by default).
// Elsewhere it returns none.
func Interfaces() ([]LinkInfo, error) {
	switch runtime.GOOS {
	case "linux":
		return sysfsLinks("/sys/class/net")
	case "darwin":
		return darwinLinks()
	}
	return nil, nil
}

// sysfsLinks is Interfaces over a sysfs class directory.
func sysfsLinks(root string) ([]LinkInfo, error) {
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

// darwinLinks lists macOS bridge interfaces, which is what the
// Thunderbolt Bridge network service creates.
func darwinLinks() ([]LinkInfo, error) {
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
// MinMTU, or "" when it is fine. It is a warning, not an error:
// the link works, only slower.
func MTUWarning(l LinkInfo) string {
	if l.MTU <= 0 || l.MTU >= MinMTU {
		return ""
	}
	how := "sudo ip link set dev " + l.Name + " mtu 9000"
	if runtime.GOOS == "darwin" {
		how = "sudo ifconfig " + l.Name + " mtu 9000 (or System Settings > Network > Thunderbolt Bridge > Details > Hardware > MTU: Jumbo)"
	}
	return fmt.Sprintf("boltmesh: Thunderbolt interface %s has MTU %d; %d moves far more per packet. Raise it on both ends: %s", l.Name, l.MTU, MinMTU, how)
}
