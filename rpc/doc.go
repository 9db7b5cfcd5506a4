// Package rpc is boltmesh's RPC agent: named handlers that any rank of a
// transport's world calls, synchronously (Agent.Call) or asynchronously
// (Agent.Go), with deadlines, correlation by request id and clean failure.
//
// An Agent sits on an *engine.NetTransport or a value that embeds one (an
// *thunderbolt.Transport); Transport's type keeps any other out as
// the program compiles. Requests and replies are distinct
// frame kinds (RPC_REQ, RPC_REPLY), each one length-prefixed frame, so a
// rank serves and calls the same peer at once. The transport's event loop
// reads them; the agent matches replies to pending calls by request id
// there, and hands requests to a bounded pool of workers. What cannot run is
// answered at once from the event loop: an unknown function
// (ErrFunctionNotFound), a full queue (ErrBusy), a request above the size
// limit (ErrTooLarge), a closing agent (ErrClosed).
//
// A call's deadline (its context's, or Options.DefaultTimeout) travels with
// the request: the handler's context ends when it passes, and the caller
// gets an error matching context.DeadlineExceeded. A lost peer fails every
// call pending on it with ErrPeerLost at once. A handler's error or panic
// reaches the caller as a *HandlerError; the server keeps serving. Calls to
// the agent's own rank take the same path minus the transport.
//
// Nested calls never deadlock. Replies never need a worker: the event loop
// completes calls. A handler blocked in a nested call made with its own
// context (Call, or Call.Wait) lends its worker out: a helper goroutine
// serves the queue until the nested call returns, so A calls B calls A
// calls B ... makes progress even with Options.Workers = 1, at the cost of
// one goroutine per handler waiting in a nested call.
//
// Close stops one agent; Shutdown stops the whole group once every rank has
// called it and no call is in flight anywhere. The wire format is in
// spec.md.
package rpc
