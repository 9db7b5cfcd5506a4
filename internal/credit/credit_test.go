package credit

import (
	"errors"
	"testing"
	"time"
)

// TestOutGrantAllocs: a grant that nobody waits for makes no channel (a
// 16 MiB allreduce between neighbours took one grant, and so one
// allocation, per call), and a waiter is still woken by the next grant
// and by the peer's loss.
func TestOutGrantAllocs(t *testing.T) {
	var c Out
	c.Init()
	total := uint64(1 << 20)
	c.Grant(total)
	if avg := testing.AllocsPerRun(100, func() {
		total += 1 << 10
		c.Grant(total)
		if !c.Take(1 << 10) {
			t.Fatal("take after a grant failed")
		}
		c.GiveBack(1 << 10)
		c.used.Add(1 << 10)
	}); avg != 0 {
		t.Fatalf("a grant with no waiter allocates %.1f objects", avg)
	}
	for _, end := range []string{"grant", "lost"} {
		_, _, wake := c.State()
		go func() {
			time.Sleep(time.Millisecond)
			if end == "grant" {
				total++
				c.Grant(total)
			} else {
				c.Fail()
			}
		}()
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatalf("a waiter was not woken by the %s", end)
		}
	}
}

// TestOutWindow: the window is the first grant's total, and later grants
// only add to what may be taken; a smaller total changes nothing.
func TestOutWindow(t *testing.T) {
	var c Out
	c.Init()
	if c.Window() != 0 || c.Take(1) {
		t.Fatal("credit before the first grant")
	}
	c.Grant(1000)
	c.Grant(900) // stale: ignored
	if c.Window() != 1000 || !c.Take(1000) || c.Take(1) {
		t.Fatalf("after a grant of 1000: window %d", c.Window())
	}
	c.Grant(1500)
	if c.Window() != 1000 || !c.Take(500) || c.Take(1) {
		t.Fatal("a later grant of 1500 did not add 500")
	}
}

// TestIn: the window is granted once; a frame beyond what is left breaks
// flow control; released credit goes back once a quarter of the window
// is released, or as soon as anything is while less than half is left.
func TestIn(t *testing.T) {
	c := In{Window: 1000}
	if got := c.Open(); got != 1000 {
		t.Fatalf("Open: %d, want 1000", got)
	}
	if got := c.Open(); got != 0 {
		t.Fatalf("a second Open granted %d", got)
	}
	if total, err := c.Use(400, false); err != nil || total != 0 {
		t.Fatalf("Use(400): %d, %v", total, err)
	}
	if total := c.Free(100); total != 0 {
		t.Fatalf("a release below a quarter, 600 left, granted %d", total)
	}
	if total := c.Free(150); total != 1250 {
		t.Fatalf("a quarter released: granted %d, want 1250", total)
	}
	if total, err := c.Use(600, false); err != nil || total != 0 {
		t.Fatalf("Use(600) of 850 left: %d, %v", total, err)
	}
	if total := c.Free(1); total != 1251 {
		t.Fatalf("250 left, below half: granted %d, want at once 1251", total)
	}
	if c.Held() != 749 {
		t.Fatalf("Held %d, want 749", c.Held())
	}
	if _, err := c.Use(600, false); !errors.Is(err, ErrFlowControl) {
		t.Fatalf("a frame beyond the credit left: %v, want ErrFlowControl", err)
	}
	if total, err := c.Use(200, true); err != nil || total != 1451 {
		t.Fatalf("a frame taken at once: %d, %v, want its credit back: 1451", total, err)
	}
}
