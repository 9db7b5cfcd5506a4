package shm

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStoreFencedIsFull is the store-buffering litmus test on the pipe's
// own pairs, in memory outside Go's heap as the pipe's words are: one
// thread arms (storeFenced32) and loads a position, the other publishes
// the position (storeFenced64) and loads the arm word. If in some round
// both loads miss both stores, a load passed a store, and a pipe's bell
// could be lost. Under the race detector atomic stores fail this in a
// few percent of the rounds; the test can miss a reordering (the threads
// may not run at once) but never reports one that cannot happen.
func TestStoreFencedIsFull(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the litmus test needs two threads running at once (GOMAXPROCS < 2)")
	}
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	arm := (*uint32)(unsafe.Pointer(&mem[0]))
	pos := (*uint64)(unsafe.Pointer(&mem[pipeLine]))
	const rounds = 200_000
	var (
		doneA, doneB atomic.Int64
		stop         atomic.Bool
		seenA        = make([]uint64, rounds+1) // pos, as the arming side loaded it
		seenB        = make([]uint32, rounds+1) // arm, as the publishing side loaded it
	)
	wait := func(other *atomic.Int64, i int) bool {
		for other.Load() < int64(i-1) {
			if stop.Load() {
				return false
			}
		}
		return true
	}
	fin := make(chan struct{})
	go func() {
		defer close(fin)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := 1; i <= rounds && wait(&doneA, i); i++ {
			storeFenced64(pos, uint64(i))
			seenB[i] = atomic.LoadUint32(arm)
			doneB.Store(int64(i))
		}
	}()
	runtime.LockOSThread()
	deadline := time.Now().Add(3 * time.Second)
	for i := 1; i <= rounds && wait(&doneB, i); i++ {
		storeFenced32(arm, uint32(i))
		seenA[i] = atomic.LoadUint64(pos)
		doneA.Store(int64(i))
		if i%1024 == 0 && time.Now().After(deadline) {
			break // a loaded machine: fewer rounds
		}
	}
	runtime.UnlockOSThread()
	stop.Store(true)
	<-fin
	n := min(doneA.Load(), doneB.Load())
	bad := 0
	for i := int64(1); i <= n; i++ {
		if seenA[i] < uint64(i) && seenB[i] < uint32(i) {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("in %d of %d rounds both loads missed both stores: storeFenced is not a full barrier", bad, n)
	}
	t.Logf("%d rounds, no reordering", n)
}
