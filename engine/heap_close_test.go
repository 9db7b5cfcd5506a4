package engine_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/engine"
)

// heapIdleTag is the tag the "heap-idle" child waits on; nothing is ever
// sent on it.
const heapIdleTag = 77

// mappings returns the address ranges of /proc/self/maps.
func mappings(t *testing.T) [][2]uintptr {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ms [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(strings.Fields(sc.Text())[0], "%x-%x", &lo, &hi); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		ms = append(ms, [2]uintptr{lo, hi})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestHeapCloseUnmaps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	ts := newMesh(t, 2, engine.Options{HeapSize: 8 << 20})
	// Traffic first, so that the loop has touched the heap.
	if err := ts[1].Put(engine.SymmetricBuffer{Rank: 0, Offset: 4096, Len: 1 << 20}, pattern(1, 0, 0, 0, 1<<20)); err != nil {
		t.Fatal(err)
	}
	barrierAll(t, ts)
	region := ts[0].Heap().Region()
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	hi := lo + uintptr(len(region))
	covered := func() bool {
		for _, m := range mappings(t) {
			if m[0] <= lo && hi <= m[1] {
				return true
			}
		}
		return false
	}
	overlaps := func() bool {
		for _, m := range mappings(t) {
			if m[0] < hi && lo < m[1] {
				return true
			}
		}
		return false
	}
	if !covered() {
		t.Fatalf("heap %#x-%#x not mapped before Close", lo, hi)
	}
	if err := ts[0].Close(); err != nil {
		t.Fatal(err)
	}
	if overlaps() {
		t.Errorf("heap %#x-%#x still mapped after Close", lo, hi)
	}
	if r := ts[0].Heap().Region(); r != nil {
		t.Errorf("Region after Close has %d bytes, want nil", len(r))
	}
	// Operations on the closed rank fail with ErrClosed rather than touch
	// the unmapped heap.
	b := engine.SymmetricBuffer{Rank: 0, Offset: 4096, Len: 16}
	if err := ts[0].Put(b, make([]byte, 16)); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("put to self after Close: %v", err)
	}
	if err := ts[0].Get(b, make([]byte, 16)); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("get from self after Close: %v", err)
	}
	if err := ts[0].Get(b.On(1), make([]byte, 16)); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("get from a peer after Close: %v", err)
	}
	// The peer sees rank 0 gone.
	requireLostSoon(t, func() error { return ts[1].Get(b, make([]byte, 16)) }, 0)
}

// TestHeapDeadTarget: over TCP (two emulated hosts), a pending get and
// puts to a target that stopped and then died fail with ErrPeerLost.
func TestHeapDeadTarget(t *testing.T) {
	lns, addrs := listeners(t, 2)
	child := startChildEnv(t, "heap-idle", 1, lns[1], addrs, []string{"BOLTMESH_HOST_ID=child"})
	tr, err := engine.FromListener(0, 2, lns[0], addrs, engine.Options{HostID: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	watchdog(t, 20*time.Second, tr)

	// The target works, then stops answering.
	src := pattern(0, 1, 0, 0, 8<<20)
	if err := tr.Put(engine.SymmetricBuffer{Rank: 1, Offset: 0, Len: 8 << 20}, src); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 48<<20)
	if err := tr.Get(engine.SymmetricBuffer{Rank: 1, Offset: 0, Len: 8 << 20}, dst[:8<<20]); err != nil || check(dst[:8<<20], 0, 1, 0, 0, 8<<20) != nil {
		t.Fatalf("get before the kill: %v", err)
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A large get that cannot complete, and puts that fill the socket.
	get, err := tr.GetNB(engine.SymmetricBuffer{Rank: 1, Offset: 8 << 20, Len: 48 << 20}, dst)
	if err != nil {
		t.Fatal(err)
	}
	puts := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(lostWithin + 5*time.Second)
		for time.Now().Before(deadline) {
			if err := tr.Put(engine.SymmetricBuffer{Rank: 1, Offset: 0, Len: 8 << 20}, src); err != nil {
				puts <- err
				return
			}
		}
		puts <- errors.New("puts to a stopped target kept succeeding")
	}()
	time.Sleep(50 * time.Millisecond)
	killed := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- get.Wait() }()
	select {
	case err := <-waitErr:
		requirePeerLost(t, err, 1)
	case <-time.After(lostWithin):
		t.Fatalf("pending get still waiting %v after the target was killed", lostWithin)
	}
	select {
	case err := <-puts:
		requirePeerLost(t, err, 1)
	case <-time.After(lostWithin):
		t.Fatalf("put still blocked %v after the target was killed", lostWithin)
	}
	t.Logf("loss noticed after %v", time.Since(killed))

	requireLostSoon(t, func() error { return tr.Put(engine.SymmetricBuffer{Rank: 1, Offset: 64, Len: 8}, src[:8]) }, 1)
	requireLostSoon(t, func() error { return tr.Get(engine.SymmetricBuffer{Rank: 1, Offset: 64, Len: 8}, dst[:8]) }, 1)
	r, err := tr.PutNB(engine.SymmetricBuffer{Rank: 1, Offset: 64, Len: 8}, src[:8])
	if err == nil {
		err = r.Wait()
	}
	requirePeerLost(t, err, 1)
	requirePeerLost(t, tr.Quiet(), 1)
	requirePeerLost(t, tr.Barrier(), 1)
	// This rank's own heap still works.
	if err := tr.Put(engine.SymmetricBuffer{Rank: 0, Offset: 0, Len: 8}, src[:8]); err != nil {
		t.Fatalf("put to self: %v", err)
	}
	if err := tr.Get(engine.SymmetricBuffer{Rank: 0, Offset: 0, Len: 8}, dst[:8]); err != nil {
		t.Fatalf("get from self: %v", err)
	}
	child.Wait()
}
