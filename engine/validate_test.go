package engine_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// TestValidate: Validate refuses what the constructors refuse, naming the
// field, and passes the zero Options.
func TestValidate(t *testing.T) {
	if err := (engine.Options{}).Validate(); err != nil {
		t.Fatalf("zero Options: %v", err)
	}
	for field, o := range map[string]engine.Options{
		"Streams":     {Streams: engine.MaxStreams + 1},
		"StripeMin":   {Streams: 4, StripeMin: 2},
		"DialTimeout": {DialTimeout: -1},
	} {
		var oe *engine.OptionError
		if err := o.Validate(); !errors.As(err, &oe) || oe.Field != field {
			t.Errorf("%+v: %v, want an OptionError for %s", o, err, field)
		}
	}
	if runtime.GOOS == "linux" {
		if err := (engine.Options{Congestion: "no-such-algorithm"}).Validate(); !errors.Is(err, engine.ErrCongestion) {
			t.Errorf("unknown congestion control: %v", err)
		}
	}
}
