package meshtest

import "github.com/boltmesh/boltmesh/engine"

// Link is one kind of link between ranks of one host that a test may run
// over, and the options that give it.
type Link struct {
	Name string
	Opts engine.Options
}

// Links are the two kinds of link between ranks of one host: pipes in
// shared memory (the default between neighbours) and loopback TCP.
var Links = []Link{
	{"shm", engine.Options{}},
	{"tcp", engine.Options{SharedMemory: engine.SharedMemoryOff}},
}
