package main

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Categories of CPU time, by the function a sample was taken in.
const (
	catSyscall = "syscalls"
	catMemmove = "memory copy (memmove)"
	catReduce  = "reduction (engine/collective)"
	catRuntime = "Go runtime/scheduler"
	catOther   = "other"
)

var categories = []string{catSyscall, catMemmove, catReduce, catRuntime, catOther}

// sysKinds are the system calls the syscall share is broken into.
var sysKinds = []string{"read", "write", "epoll", "kevent", "futex", "other"}

// collectivePkg is the package whose functions are reduction arithmetic.
const collectivePkg = "github.com/boltmesh/boltmesh/engine/collective."

// funcStat is one function's flat and cumulative time.
type funcStat struct {
	name      string
	flat, cum int64
}

// breakdown is where a profile's samples went.
type breakdown struct {
	sampleType, unit string
	total            int64
	duration         time.Duration
	funcs            []funcStat
	cats             map[string]int64
	sys              map[string]int64
	labels           map[string]map[string]int64 // key -> value -> total
}

// analyze sums p's samples (of its CPU type, or its last type) by
// function, category, system call and label.
func analyze(p *profile.Profile) *breakdown {
	idx := sampleIndex(p)
	b := &breakdown{
		sampleType: p.SampleType[idx].Type, unit: p.SampleType[idx].Unit,
		duration: time.Duration(p.DurationNanos),
		cats:     map[string]int64{}, sys: map[string]int64{}, labels: map[string]map[string]int64{},
	}
	funcs := map[string]*funcStat{}
	for _, s := range p.Sample {
		v := s.Value[idx]
		frames := framesOf(s)
		b.total += v
		b.addFuncs(funcs, frames, v)
		cat := classify(frames)
		b.cats[cat] += v
		if cat == catSyscall {
			b.sys[sysKind(frames)] += v
		}
		b.addLabels(s, v)
	}
	for _, f := range funcs {
		b.funcs = append(b.funcs, *f)
	}
	slices.SortFunc(b.funcs, func(x, y funcStat) int {
		return cmp.Or(cmp.Compare(y.flat, x.flat), cmp.Compare(y.cum, x.cum), strings.Compare(x.name, y.name))
	})
	return b
}

// sampleIndex picks the CPU sample type ("cpu", or "samples" in older
// profiles), else the last one.
func sampleIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// framesOf lists a sample's function names, leaf first, inlined calls
// included.
func framesOf(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function != nil {
				out = append(out, ln.Function.Name)
			}
		}
	}
	return out
}

// addFuncs adds v to the leaf's flat time and, once each, to every
// frame's cumulative time.
func (b *breakdown) addFuncs(funcs map[string]*funcStat, frames []string, v int64) {
	seen := map[string]bool{}
	for i, name := range frames {
		f := funcs[name]
		if f == nil {
			f = &funcStat{name: name}
			funcs[name] = f
		}
		if i == 0 {
			f.flat += v
		}
		if !seen[name] {
			seen[name] = true
			f.cum += v
		}
	}
}

func (b *breakdown) addLabels(s *profile.Sample, v int64) {
	for k, vals := range s.Label {
		m := b.labels[k]
		if m == nil {
			m = map[string]int64{}
			b.labels[k] = m
		}
		for _, x := range vals {
			m[x] += v
		}
	}
}

// unlabelled returns the samples without label key.
func (b *breakdown) unlabelled(key string) int64 {
	n := b.total
	for _, v := range b.labels[key] {
		n -= v
	}
	return n
}

// classify files a sample under a category by its leaf function.
func classify(frames []string) string {
	if len(frames) == 0 {
		return catOther
	}
	leaf := frames[0]
	switch {
	case isSyscall(leaf):
		return catSyscall
	case isMemmove(leaf):
		return catMemmove
	case strings.HasPrefix(leaf, collectivePkg):
		return catReduce
	case isRuntime(leaf):
		return catRuntime
	}
	return catOther
}

// isSyscall matches the functions that make system calls for I/O and
// readiness, and the runtime's bookkeeping around them; the runtime's
// futex sleeps count as scheduling.
func isSyscall(f string) bool {
	return strings.HasPrefix(f, "syscall.") || strings.HasPrefix(f, "golang.org/x/sys/unix.") ||
		strings.Contains(f, "runtime/syscall") || strings.HasPrefix(f, "internal/syscall/") ||
		strings.Contains(f, "entersyscall") || strings.Contains(f, "exitsyscall") ||
		f == "runtime.epollwait" || f == "runtime.kevent" || f == "runtime.netpoll" ||
		strings.HasPrefix(f, "runtime.read") || strings.HasPrefix(f, "runtime.write")
}

func isMemmove(f string) bool {
	switch f {
	case "runtime.memmove", "runtime.typedmemmove", "runtime.typedslicecopy", "runtime.slicecopy":
		return true
	}
	return false
}

func isRuntime(f string) bool {
	return strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "internal/runtime/") || strings.HasPrefix(f, "runtime/internal/")
}

// sysKind names the system call a syscall sample is in: the first frame,
// from the leaf, whose function name says which.
func sysKind(frames []string) string {
	for _, f := range frames {
		name := strings.ToLower(f[strings.LastIndexByte(f, '.')+1:])
		switch {
		case strings.Contains(name, "epoll"), name == "netpoll":
			return "epoll"
		case strings.Contains(name, "kevent"):
			return "kevent"
		case strings.Contains(name, "futex"):
			return "futex"
		case strings.Contains(name, "write"), strings.HasPrefix(name, "send"):
			return "write"
		case strings.Contains(name, "read"), strings.HasPrefix(name, "recv"):
			return "read"
		}
	}
	return "other"
}
