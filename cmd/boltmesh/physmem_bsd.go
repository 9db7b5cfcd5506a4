//go:build darwin || freebsd

package main

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// physicalMemory returns the machine's RAM in bytes, 0 if unknown.
func physicalMemory() uint64 {
	name := "hw.physmem"
	if runtime.GOOS == "darwin" {
		name = "hw.memsize"
	}
	mem, err := unix.SysctlUint64(name)
	if err != nil {
		return 0
	}
	return mem
}
