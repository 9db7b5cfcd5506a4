package main

import (
	"runtime"
	"strconv"
	"strings"
)

// What one machine is taken to hold; beyond it, bench and rank refuse to
// start unless --force is given.
const (
	// maxRanksPerCore bounds a local run: at most this many ranks per core.
	maxRanksPerCore = 8
	// bufferFactor is a rank's benchmark buffers, in multiples of the
	// largest message size (send and receive buffers, the baseline's
	// heap, reduction scratch).
	bufferFactor = 4
)

// machine is what this machine has.
type machine struct {
	cores int
	mem   uint64 // bytes this process may use; 0: unknown (not checked)
}

func thisMachine() machine { return machine{cores: runtime.NumCPU(), mem: physicalMemory()} }

// capacity is what a command would start on this machine.
type capacity struct {
	ranks                 int  // ranks on this machine: the world of a local run, else 1
	local                 bool // bench starts the ranks itself
	heap                  int  // each rank's symmetric heap
	size                  int  // the largest message size; 0 for boltmesh rank
	heapGiven, sizesGiven bool // --heap, --sizes given
}

// check refuses, unless --force, a local run of more than maxRanksPerCore
// ranks per core, and ranks whose heaps and buffers (heap + bufferFactor x
// the largest size, each) would take more than half of the machine's
// memory. The error names the flag most to blame. bf is nil for boltmesh
// rank.
func (c capacity) check(m machine, mf *meshFlags, bf *benchFlags) error {
	if mf.force {
		return nil
	}
	if c.local && c.ranks > maxRanksPerCore*m.cores {
		return flagErr("ranks", strconv.Itoa(c.ranks), "over %d ranks per core; this machine has %d cores, so at most %d local ranks (--force starts them anyway)",
			maxRanksPerCore, m.cores, maxRanksPerCore*m.cores)
	}
	heapPart, bufPart := c.ranks*c.heap, c.ranks*bufferFactor*c.size
	if m.mem == 0 || uint64(heapPart+bufPart) <= m.mem/2 {
		return nil
	}
	flag, val := "heap", mf.heap
	switch {
	case c.heapGiven && heapPart >= bufPart:
	case c.sizesGiven && bf != nil:
		flag, val = "sizes", bf.sizes
	case c.local && c.ranks > 1 && bf != nil:
		flag, val = "ranks", strconv.Itoa(bf.ranks)
	}
	return flagErr(flag, val, "%d rank(s) here would take about %s (each a %s heap and %s of buffers), over half of this machine's %s of memory (--force runs it anyway)",
		c.ranks, roughSize(uint64(heapPart+bufPart)), roughSize(uint64(c.heap)), roughSize(uint64(bufferFactor*c.size)), roughSize(m.mem))
}

// roughSize writes n bytes to a tenth of its unit: 1000 GiB, 23.5 GiB,
// 64 MiB.
func roughSize(n uint64) string {
	v, units := float64(n), []string{"B", "KiB", "MiB", "GiB", "TiB"}
	u := 0
	for ; v >= 1024 && u < len(units)-1; u++ {
		v /= 1024
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + " " + units[u]
}
