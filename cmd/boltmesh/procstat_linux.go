package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// procUsage is what this process holds now: open file descriptors, threads,
// resident memory and its high-water mark; -1 for what cannot be read.
type procUsage struct {
	fds, threads int
	rss, peakRSS int64
}

// readUsage reads /proc/self/fd and /proc/self/status.
func readUsage() procUsage {
	u := procUsage{fds: -1, threads: -1, rss: -1, peakRSS: -1}
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, err := d.Readdirnames(-1)
		d.Close()
		if err == nil {
			u.fds = len(names) - 1 // the directory's own descriptor
		}
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return u
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "Threads":
			u.threads = int(n)
		case "VmRSS":
			u.rss = n << 10 // kB
		case "VmHWM":
			u.peakRSS = n << 10
		}
	}
	return u
}
