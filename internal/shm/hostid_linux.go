//go:build linux

package shm

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The files HostID reads on Linux.
const (
	bootIDPath = "/proc/sys/kernel/random/boot_id"
	netNSPath  = "/proc/self/ns/net"
)

// hostParts returns the boot id and the network namespace's st_dev and
// st_ino.
func hostParts() ([]string, error) {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return nil, &HostIDError{Source: bootIDPath, Err: err}
	}
	boot := strings.TrimSpace(string(b))
	if boot == "" {
		return nil, &HostIDError{Source: bootIDPath, Err: ErrEmpty}
	}
	var st unix.Stat_t
	if err := unix.Stat(netNSPath, &st); err != nil {
		return nil, &HostIDError{Source: netNSPath, Err: os.NewSyscallError("stat", err)}
	}
	return []string{boot, strconv.FormatUint(uint64(st.Dev), 10), strconv.FormatUint(st.Ino, 10)}, nil
}

// machineParts is the boot id alone.
func machineParts() ([]string, error) {
	parts, err := hostParts()
	if err != nil {
		return nil, err
	}
	return parts[:1], nil
}
