package engine_test

import (
	"net"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// listeners binds n loopback listeners on ephemeral ports.
func listeners(t testing.TB, n int) ([]net.Listener, []string) { return meshtest.Listeners(t, n) }

// newMesh builds an n-rank mesh in this process and closes it at cleanup.
func newMesh(t testing.TB, n int, opts engine.Options) []*engine.NetTransport {
	return meshtest.Mesh(t, n, opts)
}
