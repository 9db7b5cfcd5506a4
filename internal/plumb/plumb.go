// Package plumb holds the hooks that package engine/collective and package
// rpc need from a transport beyond its public API: messaging on the
// collective tag space (Coll, CollOwned, CollOwner, CollAsync) and RPC frames (RPC,
// RPCBatcher, RPCSpinner), with the plain types their signatures use.
// Being internal, it keeps them out of the API of engine: no importer
// outside this module can name or call them.
//
// A transport hands its hooks out through the lookup it registers with
// Register: package engine registers one that maps an *engine.NetTransport
// to them. CollOf and RPCOf are how the layers above get them.
package plumb

// lookup is the function Register installed, or nil.
var lookup func(t any) (any, bool)

// Register installs f as the lookup of CollOf and RPCOf: f(t) returns the
// hooks of transport t (a value implementing Coll, RPC, or both), and
// false when t has none. Package engine calls it once, from an init
// function; a later call replaces the earlier lookup.
func Register(f func(t any) (any, bool)) { lookup = f }

// hooks returns what the registered lookup gives for t.
func hooks(t any) (any, bool) {
	if lookup == nil || t == nil {
		return nil, false
	}
	return lookup(t)
}

// CollOf returns t's collective hooks: t itself if it implements Coll
// (a wrapper around another transport's hooks, as tests write), else
// those the registered lookup finds for it. ok is false when t has none.
// The optional CollOwned and CollAsync are found on the returned Coll by
// type assertion.
func CollOf(t any) (c Coll, ok bool) { return hooksOf[Coll](t) }

// RPCOf returns t's RPC hooks: t itself if it implements RPC, else those
// the registered lookup finds for it. ok is false when t has none. The
// optional RPCBatcher and RPCSpinner are found on the returned RPC by
// type assertion.
func RPCOf(t any) (r RPC, ok bool) { return hooksOf[RPC](t) }

// hooksOf is CollOf and RPCOf for hooks of type T.
func hooksOf[T any](t any) (T, bool) {
	if v, ok := t.(T); ok {
		return v, true
	}
	var none T
	h, ok := hooks(t)
	if !ok {
		return none, false
	}
	v, ok := h.(T)
	return v, ok
}
