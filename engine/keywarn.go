package engine

// noKeyWarning is logged once by a transport without a mesh key that
// listens on, or dials, anything but loopback.
const noKeyWarning = "boltmesh: NO MESH KEY: any host that can reach this rank can join the mesh as a rank, forge PUTs, read every heap and see control messages. " +
	"Give every rank the same key: Options.MeshKey, the BOLTMESH_KEY environment variable, or the CLI's --key-file FILE (boltmesh keygen writes one)"

// keylessExposed reports whether a rank with mesh key key that listens
// at or dials addr (host:port) is open to strangers: it has no key and
// addr is not this machine's loopback (a wildcard address such as
// 0.0.0.0 or :7000 listens on every interface).
func keylessExposed(key []byte, addr string) bool {
	return len(key) == 0 && !isLoopback(addr)
}
