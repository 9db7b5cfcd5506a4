package own

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestNoAskLost: many goroutines each add work and ask for it, then try
// to own the thing and serve what was asked, as ioloop's drains do; an
// owner that lets go while an ask came serves it again. Whatever the
// interleaving, the last work added is served: no ask is left with
// nobody to serve it. (Run under -race too.)
func TestNoAskLost(t *testing.T) {
	const workers, rounds = 8, 2000
	var s Owned
	var added, served atomic.Int64
	serve := func() {
		for s.Acquire() {
			if s.Claim() {
				served.Store(added.Load()) // the owner takes all the work there is
			}
			if !s.Release() {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				added.Add(1)
				s.Ask()
				serve()
			}
		}()
	}
	wg.Wait()
	if got, want := served.Load(), int64(workers*rounds); got != want {
		t.Fatalf("served up to %d of %d: an ask was lost", got, want)
	}
	if s.Asked() {
		t.Fatal("an ask is still pending after every asker returned")
	}
}

// TestLockWaitsAndReports: Lock waits for the owner; Release reports an
// ask that came while the thing was owned, and Acquire fails meanwhile.
func TestLockWaitsAndReports(t *testing.T) {
	var s Owned
	if !s.Acquire() {
		t.Fatal("an unowned thing was not acquired")
	}
	if s.Acquire() {
		t.Fatal("an owned thing was acquired twice")
	}
	locked := make(chan struct{})
	go func() {
		s.Lock()
		close(locked)
	}()
	s.Ask()
	if again := s.Release(); !again {
		t.Fatal("Release did not report the ask made while owned")
	}
	<-locked
	if !s.Claim() || s.Claim() {
		t.Fatal("Claim did not take the ask exactly once")
	}
	if again := s.Release(); again {
		t.Fatal("Release reported an ask already claimed")
	}
}
