package engine

import (
	"runtime"
	"testing"
	"time"
)

// TestCrowdingHysteresis: the dynamic crowding starts once the average
// run queue beyond the cores passes crowdOn, and ends only once it falls
// to crowdOff, so that a queue at the edge does not flap.
func TestCrowdingHysteresis(t *testing.T) {
	c := crowding{cpus: 2}
	on := false
	step := func(others float64) bool {
		c.note(others)
		on = c.decide(on)
		return on
	}
	for range 10 {
		if step(2) {
			t.Fatalf("crowded with as many runnable threads as cores (avg %.2f)", c.avg)
		}
	}
	if !step(4) || !step(4) {
		t.Fatalf("not crowded with twice as many runnable threads as cores (avg %.2f)", c.avg)
	}
	if !step(2.3) {
		t.Fatalf("crowding ended just above the cores (avg %.2f)", c.avg)
	}
	for range 10 {
		step(1)
	}
	if on {
		t.Fatalf("still crowded with fewer runnable threads than cores (avg %.2f)", c.avg)
	}
}

// TestRunnableThreads: on Linux the machine's run queue is read, and
// counts at least the thread reading it.
func TestRunnableThreads(t *testing.T) {
	n, ok := runnableThreads()
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatalf("runnableThreads = %d on %s", n, runtime.GOOS)
		}
		return
	}
	if !ok || n < 1 {
		t.Fatalf("runnableThreads = %d, %v", n, ok)
	}
}

// TestCrowdingFollowsLoad: a transport whose Options.Spin is left to its
// default finds the machine crowded while threads outnumber its cores
// two to one (busy loops of this test, as other ranks sharing the cores
// would be), and tells its event loop not to spin.
func TestCrowdingFollowsLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("dynamic crowding reads Linux's run queue")
	}
	ts := pair(t, Options{SharedMemory: SharedMemoryOff})
	stop := make(chan struct{})
	defer close(stop)
	for range 2 * runtime.NumCPU() {
		go func() {
			runtime.LockOSThread()
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ts[0].crowded() {
		if time.Now().After(deadline) {
			t.Fatalf("not crowded after 10 s with %d busy threads on %d cores", 2*runtime.NumCPU(), runtime.NumCPU())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := ts[0].loop.Spin(); got != 0 {
		t.Errorf("crowded, the event loop still spins %v", got)
	}
}
