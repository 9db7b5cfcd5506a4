package collective

import (
	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// netHooks is the collective tag space of an *engine.NetTransport.
type netHooks interface {
	plumb.Coll
	plumb.CollOwned
	plumb.CollAsync
}

// hooksOf returns tr's collective tag space, as New gets it.
func hooksOf(tr *engine.NetTransport) netHooks {
	c, ok := plumb.CollOf(tr)
	if !ok {
		panic("collective: no collective hooks for a *engine.NetTransport")
	}
	return c.(netHooks)
}

// commOf is New over tr, which cannot fail.
func commOf(tr *engine.NetTransport, opts Options) *Comm {
	return newComm(tr, hooksOf(tr), opts)
}

// callsOfNet returns the tracker of tr's collective calls (calls.go), as
// New installs it, shared with every Comm over tr.
func callsOfNet(tr *engine.NetTransport) *calls {
	return callsOf(hooksOf(tr), tr.WorldSize())
}
