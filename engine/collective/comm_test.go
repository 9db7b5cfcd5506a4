package collective_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/thunderbolt"
)

// TestNewUnsupportedTransport: New refuses a nil transport with
// ErrUnsupportedTransport (no other kind compiles), and takes an
// *engine.NetTransport, also behind the Transport interface in a wrapper.
func TestNewUnsupportedTransport(t *testing.T) {
	ts := meshtest.Mesh(t, 1, engine.Options{})
	for _, tr := range []collective.Transport{nil, (*engine.NetTransport)(nil)} {
		if c, err := collective.New(tr, collective.Options{}); !errors.Is(err, collective.ErrUnsupportedTransport) || c != nil {
			t.Errorf("New(%T) = %v, %v: want ErrUnsupportedTransport", tr, c, err)
		}
	}
	for _, tr := range []collective.Transport{ts[0], struct{ collective.Transport }{ts[0]}} {
		c, err := collective.New(tr, collective.Options{})
		if err != nil {
			t.Fatalf("New(%T): %v", tr, err)
		}
		data := []float32{1, 2}
		if err := collective.AllReduce(c, data, collective.Sum); err != nil || data[1] != 2 {
			t.Errorf("AllReduce over 1 rank, New(%T): %v %v", tr, data, err)
		}
		c.Close()
	}
}

// TestNewThunderbolt: New takes an *thunderbolt.Transport, the
// transport this project is named after, and so does any value that
// embeds an *engine.NetTransport; a nil one it refuses.
func TestNewThunderbolt(t *testing.T) {
	tts := meshtest.Thunderbolt(t, 2, engine.Options{})
	if c, err := collective.New((*thunderbolt.Transport)(nil), collective.Options{}); !errors.Is(err, collective.ErrUnsupportedTransport) || c != nil {
		t.Errorf("New(nil *thunderbolt.Transport) = %v, %v: want ErrUnsupportedTransport", c, err)
	}
	got, errs := make([][]float32, 2), make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			c, err := collective.New(tts[r], collective.Options{})
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			got[r] = []float32{float32(r + 1), 10}
			errs[r] = collective.AllReduce(c, got[r], collective.Sum)
		})
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil || got[r][0] != 3 || got[r][1] != 20 {
			t.Errorf("rank %d: AllReduce over a thunderbolt.Transport: %v, %v; want [3 20]", r, got[r], errs[r])
		}
	}
}
