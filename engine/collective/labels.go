package collective

import (
	"context"
	"runtime/pprof"

	"github.com/boltmesh/boltmesh/internal/proflabel"
)

// A call labels its goroutine for profiles while it runs (op, algorithm,
// size class: collLabels, Comm.labels), over the labels of the ctx it was
// given, and gives the goroutine back exactly the labels it had before
// (proflabel), whether the caller set them from that ctx, another, or
// pprof.Do, and in the forms that take no ctx too.

// labelCache is a Comm's label sets merged over the last labelled ctx a
// call was given, so that a loop that passes one ctx allocates nothing
// once each of its calls' sets is made. Guarded by the Comm's mu (calls
// are serialized).
type labelCache struct {
	ctx    context.Context                     // the ctx they are merged over
	merged map[context.Context]context.Context // by the call's own set
}

// label labels the goroutine for a call whose own labels are call,
// merged over ctx's, and returns what restores the goroutine's labels:
// defer proflabel.Restore(c.label(ctx, call)). c.mu is held.
func (c *Comm) label(ctx context.Context, call context.Context) proflabel.Saved {
	saved := proflabel.Save()
	pprof.SetGoroutineLabels(c.labelled.over(ctx, call))
	return saved
}

// over returns call's labels over ctx's: call itself when ctx has none.
func (lc *labelCache) over(ctx, call context.Context) context.Context {
	if ctx == nil || !hasLabels(ctx) {
		return call
	}
	if ctx != lc.ctx {
		lc.ctx = ctx
		clear(lc.merged)
	}
	if m, ok := lc.merged[call]; ok {
		return m
	}
	var kv []string
	pprof.ForLabels(call, func(k, v string) bool {
		kv = append(kv, k, v)
		return true
	})
	m := pprof.WithLabels(ctx, pprof.Labels(kv...))
	if lc.merged == nil {
		lc.merged = make(map[context.Context]context.Context)
	}
	lc.merged[call] = m
	return m
}

// hasLabels reports whether ctx carries profile labels.
func hasLabels(ctx context.Context) bool {
	found := false
	pprof.ForLabels(ctx, func(string, string) bool {
		found = true
		return false
	})
	return found
}
