package meshtest

import "github.com/boltmesh/boltmesh/engine"

// Link is one kind of link between ranks of one host that a test may run
// over, and the options that give it.
type Link struct {
	Name string
	Opts engine.Options
}

// Links are the kinds of link between ranks of one host: pipes in shared
// memory (the default between neighbours), the same with large messages
// by single copy (engine.Options.SingleCopyMin; on Linux), loopback TCP,
// and loopback TCP sealed (engine.Options.Seal).
var Links = []Link{
	{"shm", engine.Options{}},
	{"shm+cma", engine.Options{SingleCopyMin: 256 << 10}},
	{"tcp", engine.Options{SharedMemory: engine.SharedMemoryOff}},
	{"tcp+seal", engine.Options{SharedMemory: engine.SharedMemoryOff, Seal: engine.SealAlways, MeshKey: []byte("meshtest's key to seal its links")}},
}
