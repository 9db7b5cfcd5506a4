//go:build linux || darwin || freebsd || netbsd || openbsd

package shm

import (
	"crypto/sha256"
	"encoding/binary"
	"runtime"
)

// HostID identifies the kernel, and the namespace, in which two processes
// can meet over Listen/Dial and share memory: equal ids, same boot (and on
// Linux the same network namespace, where abstract socket names live). It
// is the first 16 bytes of SHA-256 of GOOS and the boot identity, each
// length-prefixed:
//   - Linux: /proc/sys/kernel/random/boot_id (the same in every container
//     on a kernel) and the st_dev and st_ino of /proc/self/ns/net.
//   - darwin: sysctl kern.bootsessionuuid (new every boot).
//   - FreeBSD: sysctl kern.hostuuid (per jail) and kern.boottime.
//
// If override is not empty, HostID is SHA-256("override:"+override)
// instead, and reads nothing (tests make two hosts of one machine with
// it). If the identity cannot be read, the error is a *HostIDError
// wrapping ErrHostID; netbsd and openbsd have none (errors.ErrUnsupported
// too).
func HostID(override string) ([16]byte, error) {
	if override != "" {
		return first16(sha256.Sum256([]byte("override:" + override))), nil
	}
	parts, err := hostParts()
	if err != nil {
		return [16]byte{}, err
	}
	return digest("host", parts), nil
}

// MachineID identifies the kernel a process runs on, whatever its
// namespaces: processes with equal ids share the machine's cores. It is
// the first 16 bytes of SHA-256 of "machine", GOOS and the boot identity
// alone (Linux: the boot id; darwin: the boot session; FreeBSD: the boot
// time), each length-prefixed; the errors are HostID's.
func MachineID() ([16]byte, error) {
	parts, err := machineParts()
	if err != nil {
		return [16]byte{}, err
	}
	return digest("machine", parts), nil
}

// digest hashes what, GOOS and parts, each length-prefixed; "host" has
// no prefix (the ids of earlier versions).
func digest(what string, parts []string) [16]byte {
	h := sha256.New()
	all := append([]string{runtime.GOOS}, parts...)
	if what != "host" {
		all = append([]string{what}, all...)
	}
	for _, p := range all {
		h.Write(binary.AppendUvarint(nil, uint64(len(p))))
		h.Write([]byte(p))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return first16(sum)
}

func first16(sum [32]byte) [16]byte { return [16]byte(sum[:16]) }
