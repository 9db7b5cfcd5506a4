// Package plumb holds the hooks that package engine/collective and package
// rpc need from a transport beyond its public API: messaging on the
// tag range a transport lends to package collective (Wire, Owner) and the
// service frames that package rpc gives meaning to (Service,
// ServiceBatcher, ServiceSpinner), with the plain types their signatures
// use. Being internal, it keeps them out of the API of engine:
// no importer outside this module can name or call them.
//
// A transport carries its hooks in a Carrier it embeds (package engine's
// transports embed one under an unexported name), which makes it a
// Source: a type checked when the program compiles, not a registry of
// values looked up at run time. The interface's one method is unexported,
// so only a type that embeds a Carrier (or a value embedding such a type,
// as an *thunderbolt.Transport embeds an *engine.NetTransport) is a
// Source. WireOf and ServiceOf are how the layers above get the hooks.
package plumb

import "reflect"

// Carrier holds a transport's hooks. The zero Carrier holds none; Attach
// fills it. A type embeds it to become a Source; a wrapper that embeds a
// transport and its own Carrier (as tests write) hands out the wrapper's
// hooks instead, the shallower embedding winning.
type Carrier struct {
	wire Wire
	svc  Service
}

// Attach makes c hand out wire and svc (either may be nil: none).
// Package engine calls it once, as it makes a transport, before the
// transport is shared.
func Attach(c *Carrier, wire Wire, svc Service) {
	c.wire, c.svc = wire, svc
}

// plumbHooks returns what c holds.
func (c *Carrier) plumbHooks() *Carrier { return c }

// Source is a transport that carries hooks: a type that embeds a Carrier.
type Source interface {
	plumbHooks() *Carrier
}

// carrierOf returns s's Carrier, or nil for a nil s or an s that is a nil
// pointer (a nil *engine.NetTransport has no Carrier to ask: asking would
// dereference it).
func carrierOf(s Source) *Carrier {
	if s == nil {
		return nil
	}
	if v := reflect.ValueOf(s); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return s.plumbHooks()
}

// WireOf returns s's lent range (Wire); ok is false when s has none (a
// nil s).
func WireOf(s Source) (w Wire, ok bool) {
	if h := carrierOf(s); h != nil && h.wire != nil {
		return h.wire, true
	}
	return nil, false
}

// ServiceOf returns s's service frame hooks; ok is false when s has none
// (a nil s). The optional ServiceBatcher and ServiceSpinner are found on
// the returned Service by type assertion.
func ServiceOf(s Source) (r Service, ok bool) {
	if h := carrierOf(s); h != nil && h.svc != nil {
		return h.svc, true
	}
	return nil, false
}
