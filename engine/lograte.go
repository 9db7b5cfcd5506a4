package engine

import (
	"log/slog"
	"sync"
	"time"
)

// Refused connections are logged in a burst of refusalBurst lines, then
// one line per refusalEvery at most; each line says how many refusals
// went unlogged since the line before.
const (
	refusalBurst = 5
	refusalEvery = 10 * time.Second
)

// logLimiter is a token bucket of refusalBurst log lines, refilled with
// one every refusalEvery. The zero value is full.
type logLimiter struct {
	mu      sync.Mutex
	started bool
	tokens  int
	stamp   time.Time // when tokens was last refilled
	left    int       // lines refused since the last one allowed
}

// allow reports whether a line may be logged at now, and if so how many
// were refused since the last one allowed.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		l.started, l.tokens, l.stamp = true, refusalBurst, now
	}
	if n := now.Sub(l.stamp) / refusalEvery; n > 0 {
		l.tokens = min(refusalBurst, l.tokens+int(min(n, refusalBurst)))
		l.stamp = l.stamp.Add(n * refusalEvery)
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
// counted: at most one line per repeatEvery, carrying how many came since
// the line before ("more"); the heartbeat goroutine logs the last count
// once it is due, also after the peer stopped.
const repeatEvery = 10 * time.Second

// repeatLog rate-limits the repeated warnings of one peer. The zero value
// is ready. Lock rule: mu guards every field; leaf.
type repeatLog struct {
	mu   sync.Mutex
	at   time.Time // the last line logged; zero before the first
	n    int       // warnings counted since, not logged
	msg  string    // the last one counted, and its attributes
	args []any
}

// warn logs msg and args at now, or counts them if a line went out less
// than repeatEvery before.
func (r *repeatLog) warn(l *slog.Logger, now time.Time, msg string, args ...any) {
	r.mu.Lock()
	if !r.at.IsZero() && now.Sub(r.at) < repeatEvery {
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

// flush logs the warnings counted and not logged, with the attributes of
// the last, once repeatEvery has passed since the last line.
func (r *repeatLog) flush(l *slog.Logger, now time.Time) {
	r.mu.Lock()
	if r.n == 0 || now.Sub(r.at) < repeatEvery {
		r.mu.Unlock()
		return
	}
	msg, args, n := r.msg, r.args, r.n
	r.at, r.n, r.args = now, 0, nil
	r.mu.Unlock()
	l.Warn(msg, append(args, "more", n)...)
}
