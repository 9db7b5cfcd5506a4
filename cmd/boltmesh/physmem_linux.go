package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// physicalMemory returns the memory this process may use, in bytes: the
// machine's RAM, or its cgroup's limit (memory.max, cgroup v2) if lower;
// 0 if unknown.
func physicalMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	mem := uint64(si.Totalram) * uint64(si.Unit)
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && limit < mem {
			mem = limit
		}
	}
	return mem
}
