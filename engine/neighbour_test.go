package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// others returns every rank of a world of n but me.
func others(me, n int) []int {
	var rs []int
	for r := range n {
		if r != me {
			rs = append(rs, r)
		}
	}
	return rs
}

// meshHosts builds a mesh in this process whose rank r runs on host
// hosts[r] (Options.HostID), and closes it at cleanup.
func meshHosts(t *testing.T, hosts []string, opts engine.Options) []*engine.NetTransport {
	return meshtest.Hosts(t, hosts, opts)
}

// TestNeighboursExchange: ranks of one host meet over shared memory by
// default, and every ordered pair exchanges random sizes from 0 B to 8
// MiB on several tags from several goroutines, bytes and order verified;
// then the same in a world of two emulated hosts, where only the pairs of
// one host use shared memory, and with SharedMemoryOff, where none does.
func TestNeighboursExchange(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []string
		opts  engine.Options
		want  func(me int) []int
	}{
		{"one host/3", []string{"", "", ""}, engine.Options{}, func(me int) []int { return others(me, 3) }},
		{"two hosts/4", []string{"a", "a", "b", "b"}, engine.Options{}, func(me int) []int { return []int{me ^ 1} }},
		{"off/3", []string{"", "", ""}, engine.Options{SharedMemory: engine.SharedMemoryOff}, func(int) []int { return nil }},
		{"small rings/2", []string{"", ""}, engine.Options{PipeRing: 64 << 10}, func(me int) []int { return others(me, 2) }},
		{"single copy from 256 KiB/2", []string{"", ""}, engine.Options{SingleCopyMin: 256 << 10}, func(me int) []int { return others(me, 2) }},
		{"single copy from 1 B/3", []string{"", "", ""}, engine.Options{SingleCopyMin: 1}, func(me int) []int { return others(me, 3) }},
		{"streams/3", []string{"", "", "x"}, engine.Options{Streams: 3, StripeMin: 64 << 10}, func(me int) []int {
			return map[int][]int{0: {1}, 1: {0}, 2: nil}[me] // rank 2 stripes over TCP to both
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := meshHosts(t, c.hosts, c.opts)
			var wg sync.WaitGroup
			errs := make([]error, len(ts))
			for r, tr := range ts {
				top := tr.Topology()
				if got := top.Neighbours(); !slices.Equal(got, c.want(r)) {
					t.Fatalf("rank %d: Topology().Neighbours = %v, want %v", r, got, c.want(r))
				}
				wantCopy := c.want(r)
				if c.opts.SingleCopyMin <= 0 || runtime.GOOS != "linux" {
					wantCopy = nil
				}
				if got := top.SingleCopy(); !slices.Equal(got, wantCopy) {
					t.Fatalf("rank %d: Topology().SingleCopy = %v, want %v", r, got, wantCopy)
				}
				wg.Go(func() {
					if errs[r] = exchange(tr, 3, 6, 8<<20); errs[r] == nil {
						errs[r] = tr.Barrier()
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNeighbourPutGet: puts into a neighbour's heap are plain copies,
// visible after a barrier to a third rank's gets (concurrent ones), and a
// range outside the heap is refused before anything is copied.
func TestNeighbourPutGet(t *testing.T) {
	ts := newMesh(t, 3, engine.Options{HeapSize: 1 << 20})
	if got := ts[0].Topology().Neighbours(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("Topology().Neighbours = %v, want [1 2]", got)
	}
	bufs := make([]engine.SymmetricBuffer, 3)
	var wg sync.WaitGroup
	for r, tr := range ts {
		wg.Go(func() {
			b, err := tr.Alloc(256<<10, 64)
			if err != nil {
				t.Error(err)
			}
			bufs[r] = b
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	want := pattern(0, 1, 9, 0, 256<<10)
	dst := bufs[0]
	dst.Rank = 1
	if err := ts[0].Put(dst, want); err != nil {
		t.Fatal(err)
	}
	barrier(t, ts)
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			got := make([]byte, len(want))
			if err := ts[2].Get(dst, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, want) {
				errs <- fmt.Errorf("get %d: the neighbour's heap does not hold the put", g)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mine, err := ts[1].Bytes(bufs[1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mine, want) {
		t.Error("the target's own view of its heap does not hold the put")
	}

	// Out of bounds: refused, and the heap's last bytes are untouched.
	size := uint64(1 << 20)
	edge := engine.SymmetricBuffer{Rank: 1, Offset: size - 8, Len: 16}
	var oob *engine.OutOfBoundsError
	if err := ts[0].Put(edge, make([]byte, 16)); !errors.As(err, &oob) || !errors.Is(err, engine.ErrOutOfBounds) {
		t.Errorf("Put past the heap's end = %v, want an *OutOfBoundsError", err)
	}
	if err := ts[2].Get(edge, make([]byte, 16)); !errors.As(err, &oob) {
		t.Errorf("Get past the heap's end = %v, want an *OutOfBoundsError", err)
	}
}

// barrier runs Barrier on every rank at once.
func barrier(t *testing.T, ts []*engine.NetTransport) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(ts))
	for r, tr := range ts {
		wg.Go(func() { errs[r] = tr.Barrier() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestNeighbourRemoteRefusal: a put or get past a neighbour's heap (but
// inside the sender's) is refused at once, before anything is copied:
// the neighbour's heap is mapped here, so its size is known.
func TestNeighbourRemoteRefusal(t *testing.T) {
	ts := heapMesh2(t, engine.Options{HeapSize: 1 << 20}, engine.Options{HeapSize: 64 << 20})
	if got := ts[1].Topology().Neighbours(); !slices.Equal(got, []int{0}) {
		t.Fatalf("Topology().Neighbours = %v, want [0]", got)
	}
	small := ts[0].Heap().Size()
	for _, off := range []uint64{2 << 20, small - 10, small} {
		b := engine.SymmetricBuffer{Rank: 0, Offset: off, Len: 4096}
		var oob *engine.OutOfBoundsError
		if err := ts[1].Put(b, pattern(1, 0, 0, 0, 4096)); !errors.As(err, &oob) || oob.HeapSize != small {
			t.Errorf("put at %d = %v, want an *OutOfBoundsError naming the heap of %d bytes", off, err, small)
		}
		if err := ts[1].Get(b, make([]byte, 4096)); !errors.As(err, &oob) {
			t.Errorf("get at %d = %v, want an *OutOfBoundsError", off, err)
		}
	}
	requireZero(t, "rank 0's heap after refused puts", ts[0].Heap().Region())
}

// TestNeighbourDeadTarget: a neighbour that stopped (SIGSTOP) still
// serves gets, which read its mapped heap without it; once it is killed,
// puts and gets fail with ErrPeerLost within the bound of TCP.
func TestNeighbourDeadTarget(t *testing.T) {
	lns, addrs := listeners(t, 2)
	child := startChild(t, "heap-idle", 1, lns[1], addrs)
	tr, err := engine.FromListener(0, 2, lns[0], addrs, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	watchdog(t, 20*time.Second, tr)
	if got := tr.Topology().Neighbours(); !slices.Equal(got, []int{1}) {
		t.Fatalf("Topology().Neighbours = %v, want [1]", got)
	}
	b := engine.SymmetricBuffer{Rank: 1, Offset: 0, Len: 8 << 20}
	src := pattern(0, 1, 0, 0, 8<<20)
	if err := tr.Put(b, src); err != nil {
		t.Fatal(err)
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 8<<20)
	if err := tr.Get(b, dst); err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("get from a stopped neighbour: %v (bytes equal: %v)", err, bytes.Equal(dst, src))
	}
	killed := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for {
		err := tr.Put(b, src)
		if err != nil {
			requirePeerLost(t, err, 1)
			break
		}
		if time.Since(killed) > lostWithin {
			t.Fatalf("puts to a killed neighbour still succeed %v after", lostWithin)
		}
		time.Sleep(time.Millisecond)
	}
	requirePeerLost(t, tr.Get(b, dst), 1)
	t.Logf("loss noticed after %v", time.Since(killed))
}

// TestEagerSendsCrossUnreceived: two ranks that each send the other a
// message up to EagerMax before either receives (the exchange pattern
// eager sends allow) both finish, over shared memory as over TCP, also
// with the smallest pipe rings: a receiver leaves an unexpected payload
// in its pipe (deferral) only if the ring can hold it whole, so that its
// sender never waits for the receive.
func TestEagerSendsCrossUnreceived(t *testing.T) {
	links := append(slices.Clone(meshtest.Links), meshtest.Link{Name: "shm-small", Opts: engine.Options{PipeRing: 64 << 10}})
	for _, link := range links {
		t.Run(link.Name, func(t *testing.T) {
			ts := newMesh(t, 2, link.Opts)
			for _, size := range []int{64 << 10, 600 << 10, 1 << 20} {
				done := make(chan error, 2)
				for r := range 2 {
					go func() {
						out := pattern(r, 1-r, size, 0, size)
						if err := ts[r].Send(1-r, 3, out); err != nil {
							done <- fmt.Errorf("rank %d: send: %w", r, err)
							return
						}
						in := make([]byte, size)
						n, err := ts[r].RecvInto(1-r, 3, in)
						if err == nil && (n != size || !bytes.Equal(in, pattern(1-r, r, size, 0, size))) {
							err = fmt.Errorf("%d bytes, not what was sent", n)
						}
						if err != nil {
							err = fmt.Errorf("rank %d: recv: %w", r, err)
						}
						done <- err
					}()
				}
				for range 2 {
					select {
					case err := <-done:
						if err != nil {
							t.Fatalf("%d bytes: %v", size, err)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("%d bytes: the eager sends did not finish before their receives (deadlock)", size)
					}
				}
			}
		})
	}
}

// TestTopologyHosts: every rank of a mesh numbers the hosts alike, from
// the HostIDs in the HELLOs, in the order of each host's lowest rank; a
// rank that names no host (shared memory off) is one of its own; a star
// has none.
func TestTopologyHosts(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []string
		off   bool
		want  []int
	}{
		{name: "round-robin", hosts: []string{"b", "a", "b", "a", "c"}, want: []int{0, 1, 0, 1, 2}},
		{name: "together", hosts: []string{"a", "a", "b", "b"}, want: []int{0, 0, 1, 1}},
		{name: "shared-memory-off", hosts: []string{"a", "a", "b"}, off: true, want: []int{0, 1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := engine.Options{}
			if c.off {
				opts.SharedMemory = engine.SharedMemoryOff
			}
			for r, tr := range meshHosts(t, c.hosts, opts) {
				if got := tr.Topology().Hosts; !slices.Equal(got, c.want) {
					t.Errorf("rank %d: Hosts %v, want %v", r, got, c.want)
				}
			}
		})
	}
	for r, tr := range meshtest.Star(t, 3, engine.Options{}) {
		if got := tr.Topology().Hosts; got != nil {
			t.Errorf("star rank %d: Hosts %v, want nil", r, got)
		}
	}
}
