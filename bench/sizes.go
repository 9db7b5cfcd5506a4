package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSizes parses a comma-separated list of sizes in bytes, each a
// number with an optional binary suffix: 8, 1K, 64KiB, 1M, 16MB, 1G (K, M
// and G are powers of 1024).
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: no sizes in %q", s)
	}
	return out, nil
}

// ParseSize parses one size; see ParseSizes.
func ParseSize(f string) (int, error) {
	u := strings.ToUpper(f)
	u = strings.TrimSuffix(strings.TrimSuffix(u, "IB"), "B")
	mult := 1
	if k := len(u); k > 0 {
		switch u[k-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			u = u[:k-1]
		}
	}
	n, err := strconv.Atoi(u)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("bench: bad size %q (want e.g. 8, 1K, 1M)", f)
	}
	return n * mult, nil
}

// FormatSize writes n bytes compactly: 8B, 1KiB, 1.5MiB.
func FormatSize(n int) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + units[u]
}
