// Package match is a peer's matching state: per tag, the messages that
// arrived before their receive (Msg: an eager payload or a rendezvous
// announcement) and the receives posted before their message, each in
// order, so that messages from one source under one tag are received in
// the order they were sent; and the tombstones of rendezvous sends
// withdrawn before they were announced (Tombs). The receive type is the
// owner's: a Matcher never looks inside one.
//
// Lock rule: none of its own. A Matcher and Tombs are guarded by their
// owner's lock (the engine's peer.mu), but for the two looks documented
// as taking none (Matcher.Empty, Matcher.ChargedDeferred).
package match
