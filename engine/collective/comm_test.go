package collective_test

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestNewUnsupportedTransport: New refuses a transport without a
// collective tag space (anything but an *engine.NetTransport, here one
// hidden behind the Transport interface) with ErrUnsupportedTransport,
// and takes an *engine.NetTransport.
func TestNewUnsupportedTransport(t *testing.T) {
	ts := meshtest.Mesh(t, 1, engine.Options{})
	for _, tr := range []collective.Transport{struct{ collective.Transport }{ts[0]}, (*engine.NetTransport)(nil)} {
		if c, err := collective.New(tr, collective.Options{}); !errors.Is(err, collective.ErrUnsupportedTransport) || c != nil {
			t.Errorf("New(%T) = %v, %v: want ErrUnsupportedTransport", tr, c, err)
		}
	}
	c, err := collective.New(ts[0], collective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := []float32{1, 2}
	if err := collective.AllReduce(c, data, collective.Sum); err != nil || data[1] != 2 {
		t.Errorf("AllReduce over 1 rank: %v %v", data, err)
	}
}
