package shm

import (
	"fmt"

	"github.com/boltmesh/boltmesh/ioloop"
)

// errCorrupt fails a pipe whose other side published an impossible
// position, length or box word: ioloop.ErrProtocol, as a frame that does
// not decode.
var errCorrupt = fmt.Errorf("%w: pipe position past the ring", ioloop.ErrProtocol)
