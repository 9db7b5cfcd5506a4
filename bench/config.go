package bench

import (
	"fmt"
	"github.com/boltmesh/boltmesh/engine/collective"
	"time"
)

// Baselines a Config may ask for.
const (
	BaselineStdnet = "stdnet"
	BaselineNone   = "none"
)

// Config says what Run measures. Rank 0's Config is broadcast to every
// rank, so all ranks run the same cases.
type Config struct {
	// Suites are registered suite names, in the order to run them.
	// Empty: DefaultSuites.
	Suites []string `json:"suites"`
	// Sizes are the message sizes in bytes; empty: each suite's own
	// (Suite.Sizes, or Suite.QuickSizes with Quick).
	Sizes []int `json:"sizes,omitempty"`
	// Baseline is BaselineStdnet (default) or BaselineNone.
	Baseline string `json:"baseline"`
	// Plan chooses warm-up and iteration counts.
	Plan Plan `json:"plan"`
	// Quick selects each suite's quick sizes and a short default duration.
	Quick bool `json:"quick"`
	// Transport names, in the boltmesh results, the transport the run
	// used, as the caller observed it once the mesh formed: "shm" (every
	// other rank through shared memory), "tcp" or "thunderbolt" (none),
	// "shm+tcp" or "shm+thunderbolt" (some). Default: unnamed (empty).
	Transport string `json:"transport,omitempty"`
	// SingleCopy says, in the boltmesh results, how large messages moved
	// between ranks on one host (engine.Options.SingleCopyMin): "rings
	// (off)" (the default), "cma from 256KiB" (copied once, straight from
	// the sender's buffer, by Linux's process_vm_readv), "rings (refused
	// by the kernel)", or both with the ranks of each. Empty where no rank
	// was a neighbour.
	SingleCopy string `json:"single_copy,omitempty"`
	// Sealed says, in the boltmesh results, which network links were
	// sealed (engine.Options.Seal) and with which AEAD: "sealed
	// (aes-256-gcm)", "unsealed", or both with the ranks of each. Empty
	// where no rank was reached over the network.
	Sealed string `json:"sealed,omitempty"`
	// Algorithm is boltmesh's allreduce algorithm, as
	// collective.ParseAlgorithm reads it; empty: auto.
	Algorithm string `json:"algorithm,omitempty"`
}

// DefaultSuites are the suites run when Config.Suites is empty.
var DefaultSuites = []string{"p2p", "msgrate", "putget", "barrier", "allreduce", "rpc"}

// Default durations of a case's timed loop.
const (
	DefaultDuration = 2 * time.Second
	QuickDuration   = 40 * time.Millisecond
)

// withDefaults fills in the zero fields and validates c.
func (c Config) withDefaults() (Config, error) {
	if len(c.Suites) == 0 {
		c.Suites = DefaultSuites
	}
	for _, name := range c.Suites {
		if Lookup(name) == nil {
			return c, fmt.Errorf("bench: unknown suite %q (have %v)", name, Names())
		}
	}
	switch c.Baseline {
	case "":
		c.Baseline = BaselineStdnet
	case BaselineStdnet, BaselineNone:
	default:
		return c, fmt.Errorf("bench: unknown baseline %q (want %s or %s)", c.Baseline, BaselineStdnet, BaselineNone)
	}
	for _, s := range c.Sizes {
		if s < 0 {
			return c, fmt.Errorf("bench: negative size %d", s)
		}
	}
	if c.Algorithm != "" {
		if _, err := collective.ParseAlgorithm(c.Algorithm); err != nil {
			return c, fmt.Errorf("bench: %w", err)
		}
	}
	if c.Plan.Iters == 0 && c.Plan.Duration == 0 {
		c.Plan.Duration = DefaultDuration
		if c.Quick {
			c.Plan.Duration = QuickDuration
		}
	}
	return c, c.Plan.validate()
}

// Impls returns the implementations c measures, boltmesh first.
func (c Config) Impls() []string {
	if c.Baseline == BaselineNone {
		return []string{ImplBoltmesh}
	}
	return []string{ImplBoltmesh, ImplStdnet}
}

// SizesOf returns the message sizes suite name runs at under c (its fixed
// sizes, else c.Sizes, else its quick or full sizes, aligned as the suite
// needs); nil for an unknown suite.
func (c Config) SizesOf(name string) []int {
	s := Lookup(name)
	if s == nil {
		return nil
	}
	return c.sizesFor(s)
}

// sizesFor returns the sizes suite s runs at under c.
func (c Config) sizesFor(s *Suite) []int {
	var sizes []int
	switch {
	case s.FixedSizes != nil:
		sizes = s.FixedSizes
	case len(c.Sizes) > 0:
		sizes = c.Sizes
	case c.Quick && s.QuickSizes != nil:
		sizes = s.QuickSizes
	default:
		sizes = s.Sizes
	}
	out := make([]int, 0, len(sizes))
	for _, n := range sizes {
		if s.Align > 1 {
			n = max(n/s.Align*s.Align, s.Align)
		}
		if len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}
