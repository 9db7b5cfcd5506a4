package c10d

import (
	"fmt"
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout      = 300 * time.Second // torch's Store::kDefaultTimeout
	DefaultProbeTimeout = 2 * time.Second
	DefaultMaxValue     = 1 << 20
	// MaxMaxValue is the largest Options.MaxValue accepted.
	MaxMaxValue = 1 << 30
)

// Options configure a Client. The zero value is ready to use.
type Options struct {
	// Protocol is the store's protocol. Default ProtocolDetect: Dial finds
	// out (see the package doc).
	Protocol Protocol
	// Timeout bounds Dial, and each operation whose context has no
	// deadline, as torch's store timeout does. Default DefaultTimeout
	// (300 s).
	Timeout time.Duration
	// ProbeTimeout bounds, while Dial detects the protocol, each wait for
	// the first probe's answer before the other protocol is tried.
	// Default DefaultProbeTimeout (2 s).
	ProbeTimeout time.Duration
	// MaxValue is the longest sized string this client sends or accepts
	// (keys and values); a longer answer is refused with ErrTooLong before
	// anything is allocated for it. Default DefaultMaxValue (1 MiB), at
	// most MaxMaxValue (1 GiB).
	MaxValue int
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Protocol < ProtocolDetect || o.Protocol > ProtocolValidate:
		return o, &DialOptionError{"Protocol", fmt.Sprintf("%d is not a Protocol", int(o.Protocol))}
	case o.Timeout < 0:
		return o, &DialOptionError{"Timeout", "must not be negative"}
	case o.ProbeTimeout < 0:
		return o, &DialOptionError{"ProbeTimeout", "must not be negative"}
	case o.MaxValue < 0 || o.MaxValue > MaxMaxValue:
		return o, &DialOptionError{"MaxValue", fmt.Sprintf("%d is outside 0..%d", o.MaxValue, MaxMaxValue)}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.MaxValue == 0 {
		o.MaxValue = DefaultMaxValue
	}
	return o, nil
}
