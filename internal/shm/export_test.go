package shm

// Exported for the tests.
var (
	DecodeLen  = decodeLen
	ListenPath = listenPath
	Touch      = touch
)

// PrefixLen is the size of a message's length prefix.
const PrefixLen = prefixLen
