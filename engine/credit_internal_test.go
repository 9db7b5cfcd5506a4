package engine

import (
	"testing"
	"time"
)

// TestOutCreditGrantAllocs: a grant that nobody waits for makes no
// channel (a 16 MiB allreduce between neighbours took one grant, and so
// one allocation, per call), and a waiter is still woken by the next
// grant and by the peer's loss.
func TestOutCreditGrantAllocs(t *testing.T) {
	var c outCredit
	c.init()
	total := uint64(1 << 20)
	c.grant(total)
	if avg := testing.AllocsPerRun(100, func() {
		total += 1 << 10
		c.grant(total)
		if !c.take(1 << 10) {
			t.Fatal("take after a grant failed")
		}
		c.giveBack(1 << 10)
		c.used.Add(1 << 10)
	}); avg != 0 {
		t.Fatalf("a grant with no waiter allocates %.1f objects", avg)
	}
	for _, end := range []string{"grant", "lost"} {
		_, _, wake := c.state()
		go func() {
			time.Sleep(time.Millisecond)
			if end == "grant" {
				total++
				c.grant(total)
			} else {
				c.fail()
			}
		}()
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatalf("a waiter was not woken by the %s", end)
		}
	}
}
