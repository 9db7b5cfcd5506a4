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
// is SHA-256 of GOOS and the boot identity, each length-prefixed:
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
func HostID(override string) ([32]byte, error) {
	if override != "" {
		return sha256.Sum256([]byte("override:" + override)), nil
	}
	parts, err := hostParts()
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	for _, p := range append([]string{runtime.GOOS}, parts...) {
		h.Write(binary.AppendUvarint(nil, uint64(len(p))))
		h.Write([]byte(p))
	}
	var id [32]byte
	h.Sum(id[:0])
	return id, nil
}
