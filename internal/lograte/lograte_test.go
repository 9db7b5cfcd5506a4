package lograte

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// TestLogLimiter: a burst of Burst lines, then one per
// Every, each counting the lines left out before it; a quiet spell
// refills the burst.
func TestLogLimiter(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	for i := range Burst {
		if ok, left := l.Allow(t0); !ok || left != 0 {
			t.Fatalf("line %d of the burst: allowed %v, left %d", i, ok, left)
		}
	}
	for i := range 100 {
		if ok, _ := l.Allow(t0.Add(time.Duration(i) * time.Millisecond)); ok {
			t.Fatalf("line %d after the burst allowed within the same interval", i)
		}
	}
	if ok, left := l.Allow(t0.Add(Every)); !ok || left != 100 {
		t.Fatalf("one interval on: allowed %v, left %d, want true, 100", ok, left)
	}
	if ok, _ := l.Allow(t0.Add(Every + time.Second)); ok {
		t.Fatal("a second line in the same interval allowed")
	}
	later := t0.Add(100 * Every)
	for i := range Burst {
		ok, left := l.Allow(later)
		if !ok || (i == 0) != (left == 1) {
			t.Fatalf("after a quiet spell, line %d: allowed %v, left %d", i, ok, left)
		}
	}
	if ok, _ := l.Allow(later); ok {
		t.Fatal("the refilled burst is larger than Burst")
	}
}

// TestRepeatLog: a peer's repeated warning is logged the first time,
// then counted: the next line, a RepeatEvery on, carries the count
// ("more"), whether a new warning (warn) or the heartbeat's flush brings
// it; nothing is logged while nothing was counted.
func TestRepeatLog(t *testing.T) {
	rec := &lines{}
	l := slog.New(rec)
	var r Repeat
	t0 := time.Unix(1000, 0)
	r.Warn(l, t0, "w", "n", 0)
	for i := 1; i <= 100; i++ {
		r.Warn(l, t0.Add(time.Duration(i)*time.Millisecond), "w", "n", i)
	}
	r.Flush(l, t0.Add(RepeatEvery-time.Millisecond)) // not due
	if got := rec.take(); len(got) != 1 || got[0] != "w n=0" {
		t.Fatalf("in the first interval: %q, want the first warning alone", got)
	}
	r.Flush(l, t0.Add(RepeatEvery))
	if got := rec.take(); len(got) != 1 || got[0] != "w n=100 more=100" {
		t.Fatalf("flushed: %q, want the last warning with the count", got)
	}
	r.Flush(l, t0.Add(3*RepeatEvery))
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a flush with nothing counted logged %q", got)
	}
	r.Warn(l, t0.Add(3*RepeatEvery), "w", "n", 101) // a RepeatEvery after the last line
	r.Warn(l, t0.Add(3*RepeatEvery+time.Second), "w", "n", 102)
	r.Warn(l, t0.Add(4*RepeatEvery), "w", "n", 103)
	if got := rec.take(); len(got) != 2 || got[0] != "w n=101" || got[1] != "w n=103 more=1" {
		t.Fatalf("later warnings: %q, want the first of them and then the next due with the count", got)
	}
}

// lines is a slog.Handler that keeps each record as "msg k=v ...".
type lines struct {
	mu  sync.Mutex
	got []string
}

func (h *lines) Enabled(context.Context, slog.Level) bool { return true }
func (h *lines) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lines) WithGroup(string) slog.Handler            { return h }
func (h *lines) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
	h.mu.Lock()
	h.got = append(h.got, s)
	h.mu.Unlock()
	return nil
}

// take returns the lines so far and forgets them.
func (h *lines) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = nil
	return got
}
