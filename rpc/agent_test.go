package rpc_test

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/rpc"
)

// TestNewAgentUnsupportedTransport: NewAgent refuses a nil transport with
// ErrUnsupportedTransport (no other kind compiles), and installs
// nothing: an agent on the transport works after, also one given the
// transport behind the Transport interface in a wrapper.
func TestNewAgentUnsupportedTransport(t *testing.T) {
	ts := newMesh(t, 1)
	for _, tr := range []rpc.Transport{nil, (*engine.NetTransport)(nil)} {
		if a, err := rpc.NewAgent(tr, rpc.Options{}); !errors.Is(err, rpc.ErrUnsupportedTransport) || a != nil {
			t.Errorf("NewAgent(%T) = %v, %v: want ErrUnsupportedTransport", tr, a, err)
		}
	}
	for _, tr := range []rpc.Transport{ts[0], struct{ rpc.Transport }{ts[0]}} {
		a, err := rpc.NewAgent(tr, rpc.Options{Handlers: stdHandlers(0)})
		if err != nil {
			t.Fatalf("NewAgent(%T): %v", tr, err)
		}
		mustCall(t, a, 0, "echo", nil)
		closeAll(t, []*rpc.Agent{a})
	}
}

// TestNewAgentThunderbolt: NewAgent takes an *thunderbolt.Transport,
// and calls go both ways over it.
func TestNewAgentThunderbolt(t *testing.T) {
	tts := meshtest.Thunderbolt(t, 2, engine.Options{})
	as := make([]*rpc.Agent, 2)
	for r, tt := range tts {
		a, err := rpc.NewAgent(tt, rpc.Options{Handlers: stdHandlers(r)})
		if err != nil {
			t.Fatalf("NewAgent over a thunderbolt.Transport: %v", err)
		}
		as[r] = a
	}
	defer closeAll(t, as)
	for r, a := range as {
		wantEcho(t, mustCall(t, a, 1-r, "whoami", nil), []byte{byte(1 - r)})
	}
}
