// Package thunderbolt is boltmesh over Thunderbolt bridges (and other
// fast point-to-point links): an engine.NetTransport with defaults for
// such links (Options, Bind, FromListener), the interfaces the operating
// system reports as Thunderbolt networking (Interfaces), and advice for
// those whose MTU wastes the link (MTUWarning).
package thunderbolt

import (
	"log/slog"
	"net"

	"github.com/boltmesh/boltmesh/engine"
)

// Transport is an engine.NetTransport tuned for Thunderbolt bridges (and
// other fast point-to-point links): several streams per pair with large
// messages striped across them, large socket buffers, TCP_NODELAY (as
// every boltmesh connection). Everything it sets is an engine.Options
// field of the plain transport too; it only picks the defaults (Options).
// It is taken wherever an *engine.NetTransport is (collective.New,
// rpc.NewAgent, train.New): it embeds one.
type Transport struct {
	*engine.NetTransport
	// Links are the Thunderbolt interfaces the operating system reported
	// when the transport was built (see Interfaces).
	Links []LinkInfo
}

// Thunderbolt defaults. They are meant for real hosts joined by
// Thunderbolt and have not yet been measured on a Thunderbolt link: the
// only streams figures so far are from emulated one-core hosts, where more
// streams do not help (bench/RESULTS.md, "2026-11-29 22:00: star, streams,
// emulated hosts, RPC across processes").
const (
	// Streams is the default number of data streams per pair.
	Streams = 2
	// StripeMin is the default striping threshold.
	StripeMin = 1 << 20
	// SocketBuffer is the default SO_SNDBUF and SO_RCVBUF.
	SocketBuffer = 4 << 20
)

// Options returns opts with the Thunderbolt defaults in the fields left
// zero: Streams, StripeMin and SocketBuffer.
func Options(opts engine.Options) engine.Options {
	if opts.Streams == 0 {
		opts.Streams = Streams
	}
	if opts.StripeMin == 0 {
		opts.StripeMin = StripeMin
	}
	if opts.SocketBuffer == 0 {
		opts.SocketBuffer = SocketBuffer
	}
	return opts
}

// Bind is engine.Bind with Options, which also warns (through
// engine.Options.Logger) about every Thunderbolt interface whose MTU is
// below MinMTU, saying how to raise it.
func Bind(rank, world int, peers []string, opts engine.Options) (*Transport, error) {
	links, _ := Interfaces()
	warnMTU(links, opts.Logger)
	t, err := engine.Bind(rank, world, peers, Options(opts))
	if err != nil {
		return nil, err
	}
	return &Transport{NetTransport: t, Links: links}, nil
}

// FromListener is engine.FromListener with Options and the MTU warnings
// of Bind.
func FromListener(rank, world int, ln net.Listener, peers []string, opts engine.Options) (*Transport, error) {
	links, _ := Interfaces()
	warnMTU(links, opts.Logger)
	t, err := engine.FromListener(rank, world, ln, peers, Options(opts))
	if err != nil {
		return nil, err
	}
	return &Transport{NetTransport: t, Links: links}, nil
}

// warnMTU logs MTUWarning for every link that needs one.
func warnMTU(links []LinkInfo, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	for _, l := range links {
		if w := MTUWarning(l); w != "" {
			log.Warn(w, "interface", l.Name, "mtu", l.MTU)
		}
	}
}
