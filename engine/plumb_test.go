package engine_test

import (
	"reflect"
	"regexp"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/thunderbolt"
)

// allHooks is every hook of internal/plumb, as a *NetTransport has them.
type allHooks interface {
	plumb.Coll
	plumb.CollOwned
	plumb.CollAsync
	plumb.Service
	plumb.ServiceBatcher
	plumb.ServiceSpinner
}

// hooks returns tr's hooks, as packages collective and rpc get them.
func hooks(tr *engine.NetTransport) allHooks {
	c, ok := plumb.CollOf(tr)
	if !ok {
		panic("engine: no collective hooks for a *NetTransport")
	}
	return c.(allHooks)
}

// TestPlumbingHidden: NetTransport's method set holds none of the hooks
// of packages collective and rpc, and plumb finds them for a
// *NetTransport (every one) and for nothing else (a nil one).
func TestPlumbingHidden(t *testing.T) {
	plumbing := regexp.MustCompile(`Coll($|[A-Z])|RPC`)
	typ := reflect.TypeFor[*engine.NetTransport]()
	for i := range typ.NumMethod() {
		if name := typ.Method(i).Name; plumbing.MatchString(name) {
			t.Errorf("NetTransport exports %s", name)
		}
	}
	tr := newMesh(t, 1, engine.Options{})[0]
	c, ok := plumb.CollOf(tr)
	if _, all := c.(allHooks); !ok || !all {
		t.Errorf("CollOf(*NetTransport) = %T, %v: want every hook", c, ok)
	}
	if r, ok := plumb.ServiceOf(tr); !ok || r == nil {
		t.Errorf("ServiceOf(*NetTransport) = %v, %v", r, ok)
	}
	for _, v := range []plumb.Source{nil, (*engine.NetTransport)(nil), (*thunderbolt.Transport)(nil)} {
		if c, ok := plumb.CollOf(v); ok {
			t.Errorf("CollOf(%T) = %T, want none", v, c)
		}
		if r, ok := plumb.ServiceOf(v); ok {
			t.Errorf("ServiceOf(%T) = %T, want none", v, r)
		}
	}
}

// Only a transport is a plumb.Source, and a thunderbolt.Transport is one:
// the friends' constructors take these, checked as the program compiles.
var (
	_ plumb.Source = (*engine.NetTransport)(nil)
	_ plumb.Source = (*thunderbolt.Transport)(nil)
)
