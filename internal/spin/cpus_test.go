package spin

import "testing"

// TestCPUsFromCgroup: the cgroup quota lowers the CPU count, rounded up,
// in cgroup v2 and v1, at the process's cgroup path or the hierarchy's
// root; no quota, an unreadable one or one above the count leaves it.
func TestCPUsFromCgroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		ncpu  int
		want  int
	}{
		{"no cgroup file", map[string]string{}, 8, 8},
		{"v2 no quota", map[string]string{"/proc/self/cgroup": "0::/a\n", "/sys/fs/cgroup/a/cpu.max": "max 100000\n"}, 8, 8},
		{"v2 quota 2.5", map[string]string{"/proc/self/cgroup": "0::/a\n", "/sys/fs/cgroup/a/cpu.max": "250000 100000\n"}, 8, 3},
		{"v2 at the root", map[string]string{"/proc/self/cgroup": "0::/a/b\n", "/sys/fs/cgroup/cpu.max": "100000 100000"}, 8, 1},
		{"v2 above the count", map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "1600000 100000"}, 8, 8},
		{"v2 tiny", map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "1000 100000"}, 8, 1},
		{"v1 none", map[string]string{"/proc/self/cgroup": "4:memory:/x\n1:cpu:/\n0::/\n", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 2, 2},
		{"v1 quota 1", map[string]string{"/proc/self/cgroup": "2:cpu,cpuacct:/c\n", "/sys/fs/cgroup/cpu,cpuacct/c/cpu.cfs_quota_us": "100000", "/sys/fs/cgroup/cpu,cpuacct/c/cpu.cfs_period_us": "100000"}, 4, 1},
		{"v1 garbage", map[string]string{"/proc/self/cgroup": "1:cpu:/\n", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "lots", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}, 4, 4},
		{"v1 cpuacct only is not cpu", map[string]string{"/proc/self/cgroup": "2:cpuacct:/\n", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "100000", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}, 4, 4},
	} {
		read := func(name string) (string, bool) { s, ok := tc.files[name]; return s, ok }
		if got := cpusFrom(tc.ncpu, read); got != tc.want {
			t.Errorf("%s: %d CPUs, want %d", tc.name, got, tc.want)
		}
	}
	if n := Available(); n < 1 {
		t.Errorf("Available() = %d on this machine", n)
	}
}
