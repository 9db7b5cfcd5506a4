package credit

import "errors"

// ErrFlowControl is the cause of a peer's loss when it sent more than the
// credit this rank granted it (engine.ErrFlowControl is this error).
var ErrFlowControl = errors.New("boltmesh: flow-control credit exceeded")
