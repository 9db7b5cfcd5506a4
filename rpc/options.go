package rpc

import (
	"log/slog"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// Options configures an Agent. The zero value selects every default;
// NewAgent validates it once and names the first bad field.
type Options struct {
	// Workers is how many handlers run at once. A handler that blocks in a
	// nested call (Call, or Call.Wait, with its own context) lends its
	// worker out meanwhile, so nesting never starves the pool. Default 16,
	// as PyTorch's num_worker_threads.
	Workers int
	// QueueLen bounds the requests waiting for a worker. A request that
	// finds the queue full is answered at once with ErrBusy. Default 1024.
	QueueLen int
	// DefaultTimeout is the deadline of a call whose context has none.
	// Default 60 s, as PyTorch's.
	DefaultTimeout time.Duration
	// MaxRequestSize bounds a request: function name plus arguments, in
	// bytes. Checked by the caller before sending and by the server on
	// arrival. Default 64 MiB. A request to another rank is also bounded
	// by what that rank's transport holds: the largest payload whose
	// frame.Cost is at most half its engine.Options.MaxQueuedBytes (16
	// MiB with the default 64 MiB). The smaller bound is the one checked,
	// before anything is sent, and the one a *SizeError reports.
	MaxRequestSize int
	// MaxReplySize bounds a reply in bytes, checked by the server before
	// sending and by the caller on arrival. Default 64 MiB.
	MaxReplySize int
	// Handlers are registered before the agent starts serving, so that no
	// request that arrives early finds them missing (requests that reach
	// the transport before NewAgent wait there for it). Optional.
	Handlers map[string]Handler
	// Logger receives handler panics (with their stack). Default
	// slog.Default().
	Logger *slog.Logger
}

const (
	defaultWorkers  = 16
	defaultQueueLen = 1024
	defaultTimeout  = 60 * time.Second
	defaultMaxSize  = 64 << 20
)

func (o Options) withDefaults() (Options, error) {
	for _, f := range []struct {
		name string
		p    *int
		def  int
	}{
		{"Workers", &o.Workers, defaultWorkers},
		{"QueueLen", &o.QueueLen, defaultQueueLen},
		{"MaxRequestSize", &o.MaxRequestSize, defaultMaxSize},
		{"MaxReplySize", &o.MaxReplySize, defaultMaxSize},
	} {
		if *f.p < 0 {
			return o, &engine.OptionError{Field: f.name, Reason: "is negative"}
		}
		if *f.p == 0 {
			*f.p = f.def
		}
	}
	if o.DefaultTimeout < 0 {
		return o, &engine.OptionError{Field: "DefaultTimeout", Reason: "is negative"}
	}
	if o.DefaultTimeout == 0 {
		o.DefaultTimeout = defaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
