package engine

import (
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
