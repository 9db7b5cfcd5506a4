// Package lograte keeps repeated log lines from flooding a log: a
// token bucket for refused connections (Limiter) and a per-peer count of
// a warning that repeats (Repeat).
//
// Lock rule: each value has its own mutex, a leaf.
package lograte

import (
	"log/slog"
	"sync"
	"time"
)

// Refused connections are logged in a burst of Burst lines, then
// one line per Every at most; each line says how many refusals
// went unlogged since the line before.
const (
	Burst = 5
	Every = 10 * time.Second
)

// Limiter is a token bucket of Burst log lines, refilled with
// one every Every. The zero value is full.
type Limiter struct {
	mu      sync.Mutex
	started bool
	tokens  int
	stamp   time.Time // when tokens was last refilled
	left    int       // lines refused since the last one allowed
}

// Allow reports whether a line may be logged at now, and if so how many
// were refused since the last one allowed.
func (l *Limiter) Allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		l.started, l.tokens, l.stamp = true, Burst, now
	}
	if n := now.Sub(l.stamp) / Every; n > 0 {
		l.tokens = min(Burst, l.tokens+int(min(n, Burst)))
		l.stamp = l.stamp.Add(n * Every)
	}
	if l.tokens == 0 {
		l.left++
		return false, 0
	}
	l.tokens--
	left := l.left
	l.left = 0
	return true, left
}

// A warning that a peer can cause over and over (a frame its coordinator
// cannot forward) is logged at once the first time, and after that only
// counted: at most one line per RepeatEvery, carrying how many came since
// the line before ("more"); the heartbeat goroutine logs the last count
// once it is due, also after the peer stopped.
const RepeatEvery = 10 * time.Second

// Repeat rate-limits the repeated warnings of one peer. The zero value
// is ready. Lock rule: mu guards every field; leaf.
type Repeat struct {
	mu   sync.Mutex
	at   time.Time // the last line logged; zero before the first
	n    int       // warnings counted since, not logged
	msg  string    // the last one counted, and its attributes
	args []any
}

// Warn logs msg and args at now, or counts them if a line went out less
// than RepeatEvery before.
func (r *Repeat) Warn(l *slog.Logger, now time.Time, msg string, args ...any) {
	r.mu.Lock()
	if !r.at.IsZero() && now.Sub(r.at) < RepeatEvery {
		r.n++
		r.msg, r.args = msg, args
		r.mu.Unlock()
		return
	}
	n := r.n
	r.at, r.n, r.args = now, 0, nil
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "more", n)
	}
	l.Warn(msg, args...)
}

// Flush logs the warnings counted and not logged, with the attributes of
// the last, once RepeatEvery has passed since the last line.
func (r *Repeat) Flush(l *slog.Logger, now time.Time) {
	r.mu.Lock()
	if r.n == 0 || now.Sub(r.at) < RepeatEvery {
		r.mu.Unlock()
		return
	}
	msg, args, n := r.msg, r.args, r.n
	r.at, r.n, r.args = now, 0, nil
	r.mu.Unlock()
	l.Warn(msg, append(args, "more", n)...)
}
