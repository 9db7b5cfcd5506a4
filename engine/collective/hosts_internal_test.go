package collective

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// sentBytes is a rank's lent range that counts the bytes it sends to
// each rank.
type sentBytes struct {
	plumb.Wire
	mu sync.Mutex
	to map[int]int
}

func (s *sentBytes) Send(ctx context.Context, to int, tag, meta uint32, p []byte, m plumb.SendMode) (plumb.Handle, error) {
	s.mu.Lock()
	s.to[to] += len(p)
	s.mu.Unlock()
	return s.Wire.Send(ctx, to, tag, meta, p, m)
}

// runCounted runs call on every rank of ts at once, each over a Comm
// with opts whose sends sentBytes counts, fails the test on any rank's
// error, and returns the counts.
func runCounted(t *testing.T, ts []*engine.NetTransport, opts Options, call func(r int, c *Comm) error) []*sentBytes {
	t.Helper()
	counters := make([]*sentBytes, len(ts))
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for r := range ts {
		counters[r] = &sentBytes{Wire: hooksOf(ts[r]).Wire, to: make(map[int]int)}
		c := newComm(ts[r], counters[r], opts)
		wg.Go(func() { errs[r] = call(r, c) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return counters
}

// alternateHosts is a mesh of n ranks on 2 hosts, numbered alternately
// (rank r on host r mod 2, as mpirun --map-by node places them).
func alternateHosts(t *testing.T, n int) []*engine.NetTransport {
	hosts := make([]string, n)
	for r := range hosts {
		hosts[r] = []string{"a", "b"}[r%2]
	}
	return meshtest.Hosts(t, hosts, engine.Options{})
}

// acrossHosts is the bytes rank r (or, for r < 0, every rank) sent to
// ranks of the other host of alternateHosts.
func acrossHosts(counters []*sentBytes, r int) int {
	n := 0
	for from, s := range counters {
		if r >= 0 && from != r {
			continue
		}
		for to, b := range s.to {
			if to%2 != from%2 {
				n += b
			}
		}
	}
	return n
}

// TestHalvingNearestFirst: Rabenseifner's reduce-scatter halves the
// message with the nearest rank first and the farthest last, so that
// where ranks of one host are numbered together (as launchers number
// them) the most bytes stay on the host and the fewest cross the link:
// with 8 ranks, 4 to a host, each rank sends its host's partners 1/2 and
// 1/4 of the message, twice (reduce-scatter, all-gather), and the other
// host 1/8, twice; farthest first, it sent the other host 1/2, twice.
// The sums are right either way.
func TestHalvingNearestFirst(t *testing.T) {
	const n, elems = 8, 1 << 14
	ts := meshtest.Mesh(t, n, engine.Options{})
	data := make([][]float64, n)
	counters := runCounted(t, ts, Options{Algorithm: AlgorithmHalving}, func(r int, c *Comm) error {
		data[r] = make([]float64, elems)
		for i := range data[r] {
			data[r][i] = float64(r*elems + i)
		}
		return AllReduce(c, data[r], Sum)
	})
	for r := range n {
		for i, v := range data[r] {
			if want := float64(n*i + elems*n*(n-1)/2); v != want {
				t.Fatalf("rank %d element %d: %v, want %v", r, i, v, want)
			}
		}
	}
	size := elems * 8
	for r := range n {
		for d, share := range map[int]int{1: 2, 2: 4, 4: 8} {
			peer := r ^ d
			if got, want := counters[r].to[peer], 2*size/share; got != want {
				t.Errorf("rank %d sent rank %d (distance %d) %d bytes, want %d (2 x 1/%d of %d)", r, peer, d, got, want, share, size)
			}
		}
	}
}

func TestHostOrder(t *testing.T) {
	for _, c := range []struct {
		hosts     []int
		n         int
		order, at []int
	}{
		{hosts: []int{0, 1, 0, 1, 2}, n: 5, order: []int{0, 2, 1, 3, 4}, at: []int{0, 2, 1, 3, 4}},
		{hosts: []int{0, 1, 2, 0, 1, 2}, n: 6, order: []int{0, 3, 1, 4, 2, 5}, at: []int{0, 2, 4, 1, 3, 5}},
		{hosts: []int{0, 0, 1, 1}, n: 4}, // already together: rank order
		{hosts: []int{0, 1, 2}, n: 3},    // a host each
		{hosts: []int{0, 1}, n: 3},       // not the world's
		{hosts: []int{0, 7, 0}, n: 3},    // not a host number
		{hosts: nil, n: 3},               // a star
	} {
		order, at := hostOrder(c.hosts, c.n)
		if !slices.Equal(order, c.order) || !slices.Equal(at, c.at) {
			t.Errorf("hostOrder(%v, %d) = %v, %v; want %v, %v", c.hosts, c.n, order, at, c.order, c.at)
		}
	}
	if !sharedHosts([]int{0, 1, 0}) || sharedHosts([]int{0, 1, 2}) || sharedHosts([]int{0, 0, 0}) {
		t.Error("sharedHosts: want true only for several hosts, one with several ranks")
	}
}

// hostsFake is a Transport of n ranks that span machines on hosts; only
// the algorithm choice is exercised.
type hostsFake struct {
	Transport
	n     int
	hosts []int
}

func (f hostsFake) WorldSize() int { return f.n }

func (f hostsFake) Topology() engine.Topology {
	return engine.Topology{Center: -1, Hosts: f.hosts}
}

// TestAutoHalvingAcrossHosts: in a world that spans hosts of several
// ranks, Auto keeps Rabenseifner's allreduce from HalvingMin up, where
// the ring would send 2(n-1)/n of the message over each host's link;
// with a host each, or RingMin set, the ring takes over from RingMin.
func TestAutoHalvingAcrossHosts(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []int
		opts  Options
		size  int
		want  Algorithm
	}{
		{"shared 16 MiB", []int{0, 1, 0, 1, 0, 1, 0, 1}, Options{}, 16 << 20, AlgorithmHalving},
		{"shared 64 KiB", []int{0, 0, 0, 0, 1, 1, 1, 1}, Options{}, 64 << 10, AlgorithmHalving},
		{"shared 8 B", []int{0, 0, 1, 1}, Options{}, 8, AlgorithmDoubling},
		{"a host each", []int{0, 1, 2, 3}, Options{}, 16 << 20, AlgorithmRing},
		{"RingMin set", []int{0, 0, 1, 1}, Options{RingMin: 1 << 20}, 16 << 20, AlgorithmRing},
	} {
		c.opts.Algorithm = AlgorithmAuto
		cm := newComm(hostsFake{n: len(c.hosts), hosts: c.hosts}, nil, c.opts)
		if got, err := cm.allReduceAlgo(len(c.hosts), c.size); err != nil || got != c.want {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
	}
}

// TestAllReduceByHost: with the ranks of 2 hosts numbered alternately,
// every algorithm gives every rank the same, right sums, in any world
// size, and halving sends the other host 1/p2 of the message each way
// (its farthest partner in host order), the rest staying on the host.
func TestAllReduceByHost(t *testing.T) {
	for _, n := range []int{4, 5, 8} {
		ts := alternateHosts(t, n)
		for _, algo := range []Algorithm{AlgorithmDoubling, AlgorithmHalving, AlgorithmRing} {
			const elems = 3 << 10
			data := make([][]float32, n)
			counters := runCounted(t, ts, Options{Algorithm: algo}, func(r int, c *Comm) error {
				data[r] = make([]float32, elems)
				for i := range data[r] {
					data[r][i] = float32(r+1) / float32(i+3) // sums whose bits depend on the order
				}
				return AllReduce(c, data[r], Sum)
			})
			for r := range n {
				if !slices.Equal(data[r], data[0]) {
					t.Fatalf("n=%d %v: rank %d's sums differ from rank 0's", n, algo, r)
				}
			}
			for i, v := range data[0] {
				if want := float64(n*(n+1)/2) / float64(i+3); math.Abs(float64(v)-want) > 1e-5*want {
					t.Fatalf("n=%d %v element %d: %v, want %v", n, algo, i, v, want)
				}
			}
			if algo != AlgorithmHalving || n != 8 {
				continue
			}
			for r := range n {
				if got, want := acrossHosts(counters, r), 2*elems*4/8; got != want {
					t.Errorf("n=8 halving: rank %d sent the other host %d bytes, want %d (2 x 1/8 of %d)", r, got, want, elems*4)
				}
			}
		}
	}
}

// TestBroadcastByHost: with the ranks of 2 hosts numbered alternately, a
// scattering broadcast's chain crosses to the other host once, not at
// every hop: 8 ranks send the other host 4/8 of the message (the
// scatter) and 7/8 (one hop of the chain), where in rank order they sent
// it 4/8 and 7 x 7/8. Every rank gets root's bytes.
func TestBroadcastByHost(t *testing.T) {
	const n, size = 8, 1 << 20
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>8)
	}
	data := make([][]byte, n)
	counters := runCounted(t, alternateHosts(t, n), Options{}, func(r int, c *Comm) error {
		data[r] = make([]byte, size)
		if r == 0 {
			copy(data[r], want)
		}
		return c.BroadcastBytes(context.Background(), 0, data[r])
	})
	for r := range n {
		if !slices.Equal(data[r], want) {
			t.Fatalf("rank %d did not get root's bytes", r)
		}
	}
	if across, max := acrossHosts(counters, -1), size*(4+7)/8; across > max {
		t.Errorf("the ranks sent the other host %d bytes, want at most %d (4/8 + 7/8 of %d)", across, max, size)
	}
}

// TestRingsByHost: AllGather's and ReduceScatter's rings go round in host
// order: with 6 ranks of 2 hosts numbered alternately and uneven counts,
// every rank gets the right segments and sums, and the ring crosses
// between the hosts twice, not at every hop: all ranks together send the
// other host at most 2 x the whole (each crossing carries it less one
// segment), where in rank order they sent it 5 x.
func TestRingsByHost(t *testing.T) {
	const n = 6
	ts := alternateHosts(t, n)
	counts := []int{1000, 3000, 17, 2500, 0, 1200}
	total := 0
	for _, k := range counts {
		total += k
	}
	offset := func(r int) int { return collOffset(counts, r, 1) }
	for _, op := range []string{"allgather", "reducescatter"} {
		bufs := make([][]float64, n)
		counters := runCounted(t, ts, Options{}, func(r int, c *Comm) error {
			bufs[r] = make([]float64, total)
			if op == "reducescatter" {
				for i := range bufs[r] {
					bufs[r][i] = float64(r + i)
				}
				return ReduceScatter(c, bufs[r], counts, Sum)
			}
			in := make([]float64, counts[r])
			for i := range in {
				in[i] = float64(r*10000 + i)
			}
			return AllGather(c, in, bufs[r], counts)
		})
		for r := range n {
			for q := range n {
				if op == "reducescatter" && q != r {
					continue
				}
				for i := range counts[q] {
					want := float64(q*10000 + i)
					if op == "reducescatter" {
						want = float64(n*(offset(q)+i) + n*(n-1)/2)
					}
					if got := bufs[r][offset(q)+i]; got != want {
						t.Fatalf("%s rank %d, segment %d element %d: %v, want %v", op, r, q, i, got, want)
					}
				}
			}
		}
		if across, max := acrossHosts(counters, -1), 2*total*8; across > max {
			t.Errorf("%s: the ranks sent the other host %d bytes, want at most %d (2 x %d elements)", op, across, max, total)
		}
	}
}
