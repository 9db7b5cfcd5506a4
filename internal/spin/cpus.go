package spin

import (
	"math"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
)

// Available is how many cores this process may use: runtime.NumCPU
// (the CPUs its affinity mask allows, sched_getaffinity on Linux),
// lowered on Linux to a cgroup CPU quota (cgroup v2 cpu.max, v1
// cpu.cfs_quota_us over cpu.cfs_period_us, rounded up), as a container
// with --cpus has. Ranks count against it to tell whether they outnumber
// the cores (crowding). Read once.
func Available() int { return cpuCount.n }

var cpuCount = struct{ n int }{n: cpusFrom(runtime.NumCPU(), readCgroupFile)}

// readCgroupFile reads a file of /proc or /sys; it is a variable's value
// so that tests can give cpusFrom a made-up machine.
func readCgroupFile(name string) (string, bool) {
	if runtime.GOOS != "linux" {
		return "", false
	}
	b, err := os.ReadFile(name)
	return string(b), err == nil
}

// cpusFrom is ncpu lowered to the quota of this process's cgroup, found
// through read (which reads /proc/self/cgroup and the cgroup files).
func cpusFrom(ncpu int, read func(string) (string, bool)) int {
	if q := cgroupQuota(read); q > 0 && q < float64(ncpu) {
		return max(1, int(math.Ceil(q)))
	}
	return ncpu
}

// cgroupQuota is the CPU quota of this process's cgroup in CPUs, or 0
// if it has none or it cannot be read: v2's cpu.max ("max 100000" or
// "200000 100000") in the unified hierarchy, else v1's
// cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us in the cpu
// controller's, each at the process's cgroup path and then at the
// hierarchy's root (a container sees its own cgroup as the root).
func cgroupQuota(read func(string) (string, bool)) float64 {
	self, ok := read("/proc/self/cgroup")
	if !ok {
		return 0
	}
	for _, line := range strings.Split(self, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			for _, dir := range []string{path.Join("/sys/fs/cgroup", f[2]), "/sys/fs/cgroup"} {
				if s, ok := read(path.Join(dir, "cpu.max")); ok {
					return parseCPUMax(s)
				}
			}
		case hasController(f[1], "cpu"):
			for _, root := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
				for _, dir := range []string{path.Join(root, f[2]), root} {
					q, okq := read(path.Join(dir, "cpu.cfs_quota_us"))
					p, okp := read(path.Join(dir, "cpu.cfs_period_us"))
					if okq && okp {
						return ratio(q, p)
					}
				}
			}
		}
	}
	return 0
}

// hasController reports whether a v1 hierarchy's controller list
// ("cpu,cpuacct") names c.
func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

// parseCPUMax reads cgroup v2's cpu.max: "QUOTA PERIOD", QUOTA "max"
// for none.
func parseCPUMax(s string) float64 {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	return ratio(f[0], f[1])
}

// ratio is quota over period, both in microseconds, or 0 unless both
// are positive.
func ratio(quota, period string) float64 {
	q, err1 := strconv.ParseFloat(strings.TrimSpace(quota), 64)
	p, err2 := strconv.ParseFloat(strings.TrimSpace(period), 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0
	}
	return q / p
}
