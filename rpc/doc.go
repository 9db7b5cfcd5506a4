// Package rpc will hold boltmesh's RPC agent: named handlers called on any
// rank, synchronously or asynchronously, with deadlines, correlation by
// request id and clean failure. Until that work lands it holds only this
// documentation.
package rpc
