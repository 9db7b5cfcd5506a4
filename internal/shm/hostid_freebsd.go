//go:build freebsd

package shm

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// hostParts returns kern.hostuuid and kern.boottime (seconds and
// microseconds). FreeBSD has no boot UUID; the boot time stands for the
// boot, and the rendezvous settles any doubt.
func hostParts() ([]string, error) {
	host, err := unix.Sysctl("kern.hostuuid")
	if err != nil {
		return nil, &HostIDError{Source: "sysctl kern.hostuuid", Err: err}
	}
	if host == "" {
		return nil, &HostIDError{Source: "sysctl kern.hostuuid", Err: ErrEmpty}
	}
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return nil, &HostIDError{Source: "sysctl kern.boottime", Err: err}
	}
	return []string{host, strconv.FormatInt(int64(tv.Sec), 10), strconv.FormatInt(int64(tv.Usec), 10)}, nil
}

// machineParts is the boot time alone: a jail's hostuuid is its own, but
// its cores are the kernel's.
func machineParts() ([]string, error) {
	parts, err := hostParts()
	if err != nil {
		return nil, err
	}
	return parts[1:], nil
}
