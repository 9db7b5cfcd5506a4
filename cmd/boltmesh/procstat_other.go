//go:build !linux

package main

// procUsage is what this process holds now: open file descriptors, threads,
// resident memory and its high-water mark; -1 for what cannot be read.
type procUsage struct {
	fds, threads int
	rss, peakRSS int64
}

// readUsage knows nothing outside Linux (no /proc/self).
func readUsage() procUsage { return procUsage{fds: -1, threads: -1, rss: -1, peakRSS: -1} }
