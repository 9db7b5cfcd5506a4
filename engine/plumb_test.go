package engine_test

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/thunderbolt"
)

// serviceHooks is every service hook of internal/plumb, as a
// *NetTransport has them.
type serviceHooks interface {
	plumb.Service
	plumb.ServiceBatcher
	plumb.ServiceSpinner
}

// testHooks is tr's hooks, as packages collective and rpc get them, with
// a blocking send and receive on the lent range.
type testHooks struct {
	plumb.Wire
	serviceHooks
}

// hooks returns tr's hooks.
func hooks(tr *engine.NetTransport) *testHooks {
	w, ok := plumb.WireOf(tr)
	s, ok2 := plumb.ServiceOf(tr)
	if !ok || !ok2 {
		panic("engine: no hooks for a *NetTransport")
	}
	return &testHooks{Wire: w, serviceHooks: s.(serviceHooks)}
}

// SendMsg sends p to rank to under tag with meta, returning once p may be
// reused.
func (h *testHooks) SendMsg(ctx context.Context, to int, tag, meta uint32, p []byte) error {
	_, err := h.Send(ctx, to, tag, meta, p, plumb.SendWait)
	return err
}

// Recv receives from rank from under tag a message with meta into dst, as
// a call that needs every rank does.
func (h *testHooks) Recv(ctx context.Context, from int, tag, meta uint32, dst []byte) (int, error) {
	hd, err := h.Post(from, tag, meta, dst, false)
	if err != nil {
		return 0, err
	}
	n, _, err := h.Wait(from, hd, plumb.Waiting{Ctx: ctx, How: plumb.All})
	return n, err
}

// TryRecv is Recv of a message already in: ok is false if none is.
func (h *testHooks) TryRecv(from int, tag, meta uint32, dst []byte) (int, bool, error) {
	hd, err := h.Post(from, tag, meta, dst, true)
	if err == plumb.ErrNotQueued {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n, _, err := h.Wait(from, hd, plumb.Waiting{How: plumb.All})
	return n, err == nil, err
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
	// No hook is a method of NetTransport (Send is its own, of another
	// signature).
	for _, hook := range []reflect.Type{reflect.TypeFor[plumb.Wire](), reflect.TypeFor[serviceHooks]()} {
		for i := range hook.NumMethod() {
			m := hook.Method(i)
			if got, ok := typ.MethodByName(m.Name); ok && got.Type.NumIn() == m.Type.NumIn()+1 {
				t.Errorf("NetTransport has the hook %s", m.Name)
			}
		}
	}
	tr := newMesh(t, 1, engine.Options{})[0]
	if w, ok := plumb.WireOf(tr); !ok || w == nil {
		t.Errorf("WireOf(*NetTransport) = %v, %v", w, ok)
	}
	if r, ok := plumb.ServiceOf(tr); !ok || r == nil {
		t.Errorf("ServiceOf(*NetTransport) = %v, %v", r, ok)
	} else if _, all := r.(serviceHooks); !all {
		t.Errorf("ServiceOf(*NetTransport) = %T: want every service hook", r)
	}
	for _, v := range []plumb.Source{nil, (*engine.NetTransport)(nil), (*thunderbolt.Transport)(nil)} {
		if c, ok := plumb.WireOf(v); ok {
			t.Errorf("WireOf(%T) = %T, want none", v, c)
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

// RecvFrom is recvFrom of package collective: a receive that gives up only
// when its peer is lost, at deadline, or (bytes being read in) at
// inFlightUntil.
func (h *testHooks) RecvFrom(ctx context.Context, from int, tag, meta uint32, dst []byte, deadline, inFlightUntil time.Time) (int, error) {
	r, err := h.PostFrom(from, tag, meta, dst)
	if err != nil {
		return 0, err
	}
	return r.Wait(ctx, deadline, inFlightUntil)
}

// PostFrom posts a receive (plumb.Wire.Post) as a testRecv.
func (h *testHooks) PostFrom(from int, tag, meta uint32, dst []byte) (*testRecv, error) {
	hd, err := h.Post(from, tag, meta, dst, false)
	if err != nil {
		return nil, err
	}
	return &testRecv{w: h.Wire, from: from, h: hd}, nil
}

// testRecv is a posted receive and the ways package collective finishes
// one.
type testRecv struct {
	w    plumb.Wire
	from int
	h    plumb.Handle
}

// Wait waits as RecvFrom does.
func (r *testRecv) Wait(ctx context.Context, deadline, inFlightUntil time.Time) (int, error) {
	n, _, err := r.w.Wait(r.from, r.h, plumb.Waiting{Ctx: ctx, Until: &plumb.Until{Deadline: deadline, InFlight: inFlightUntil}})
	return n, err
}

// Drop finishes the receive at once, without waiting for bytes being read
// in: it reports whether dst may be reused.
func (r *testRecv) Drop() bool {
	_, _, err := r.w.Wait(r.from, r.h, plumb.Waiting{How: plumb.Now, Until: &plumb.Until{InFlight: time.Unix(1, 0)}})
	return !errors.Is(err, plumb.ErrInFlight)
}
