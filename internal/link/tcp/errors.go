package tcp

import "errors"

// ErrNoPerSocketCongestion means this system sets TCP congestion control
// for the whole system only, not per socket (TCP_CONGESTION).
var ErrNoPerSocketCongestion = errors.New("this system has no per-socket TCP_CONGESTION")
