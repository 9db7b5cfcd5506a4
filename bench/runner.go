package bench

import (
	"fmt"
	"slices"

	"github.com/boltmesh/boltmesh/bench/stdnet"
	"github.com/boltmesh/boltmesh/engine"
)

// Runner runs benchmarks on one rank of a boltmesh mesh. Every rank of
// the mesh runs Run at the same time.
type Runner struct {
	// T is this rank's boltmesh transport: the implementation under test
	// and the harness's control channel. Run does not close it.
	T *engine.NetTransport
	// StdnetHost is the host or IP the stdnet baseline listens on, reachable
	// by the other ranks; "" is 127.0.0.1.
	StdnetHost string
	// MeshKey is the key every connection of the stdnet baseline proves
	// (its net/rpc connections included), as T's connections prove
	// engine.Options.MeshKey; pass the same. nil: none, and the baseline
	// takes any connection whose hello names an expected rank. Either way
	// a connection that fails the handshake is refused without disturbing
	// the run.
	MeshKey []byte
	// Progress, if set, is called on rank 0 before each case and once more
	// at the end (done == total).
	Progress func(done, total int, what string)
}

// Run runs cfg (rank 0's; other ranks' cfg is ignored) and returns, on
// rank 0, the report; on other ranks the report is nil. If any rank's data
// check failed, the error wraps ErrCheck on every rank (and rank 0's report
// has the failed results, with Error set).
func (r *Runner) Run(cfg Config) (*Report, error) {
	ctl := control{r.T}
	if r.T.Rank() != 0 {
		cfg = Config{} // decoded from rank 0's, into slices of its own
	}
	if err := ctl.bcastJSON(&cfg); err != nil {
		return nil, err
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w, err := r.newWorld(cfg)
	if err != nil {
		return nil, err
	}
	defer w.close()
	rep := &Report{Schema: Schema, Host: ThisHost()}
	cases := w.cases(cfg)
	for i, c := range cases {
		r.progress(i, len(cases), c.String())
		res, err := w.runCase(cfg, c)
		if err != nil {
			return nil, fmt.Errorf("bench: %v: %w", c, err)
		}
		if res != nil {
			rep.Results = append(rep.Results, *res)
		}
	}
	if err := w.end(); err != nil {
		return nil, err
	}
	r.progress(len(cases), len(cases), "done")
	return r.verdict(ctl, rep)
}

// verdict tells every rank whether any case failed, and returns rank 0's
// report.
func (r *Runner) verdict(ctl control, rep *Report) (*Report, error) {
	failed, err := ctl.bcastInt(len(rep.Failed()))
	if err != nil {
		return nil, err
	}
	if r.T.Rank() != 0 {
		rep = nil
	}
	if failed > 0 {
		return rep, fmt.Errorf("%w in %d case(s)", ErrCheck, failed)
	}
	return rep, nil
}

func (r *Runner) progress(done, total int, what string) {
	if r.Progress != nil && r.T.Rank() == 0 {
		r.Progress(done, total, what)
	}
}

// newWorld builds the endpoints cfg needs: boltmesh, and the stdnet mesh
// unless the baseline is none.
func (r *Runner) newWorld(cfg Config) (*world, error) {
	w := &world{ctl: control{r.T}, transport: cfg.Transport, singleCopy: cfg.SingleCopy, sealed: cfg.Sealed, eps: map[string]Endpoint{}}
	bolt, err := newBoltEndpoint(r.T, cfg.Algorithm)
	if err != nil {
		return nil, err
	}
	w.bolt = bolt
	w.eps[ImplBoltmesh] = w.bolt
	if cfg.Baseline == BaselineNone {
		return w, nil
	}
	host := r.StdnetHost
	if host == "" {
		host = "127.0.0.1"
	}
	m, err := w.connectStdnet(host, r.MeshKey)
	if err != nil {
		return nil, err
	}
	w.std, w.stdRPC = m, &stdRPC{host: host, key: r.MeshKey, ctl: w.ctl}
	w.eps[ImplStdnet] = stdEndpoint{m, w.stdRPC}
	return w, nil
}

// world is one rank's view of a run: the endpoints and the control channel.
type world struct {
	ctl        control
	transport  string // Config.Transport
	singleCopy string // Config.SingleCopy
	sealed     string // Config.Sealed
	eps        map[string]Endpoint
	bolt       *boltEndpoint
	std        *stdnet.Mesh
	stdRPC     *stdRPC
}

// end releases, on every rank at once, what cases started for the whole
// run: the boltmesh RPC agent.
func (w *world) end() error {
	return w.bolt.endRPC(w.ctl)
}

// close releases what is left on this rank alone, after end or instead of
// it when the run fails.
func (w *world) close() {
	w.bolt.closeRPC()
	w.stdRPC.close()
	if w.std != nil {
		w.std.Close()
	}
}

// caseID names one case of a run.
type caseID struct {
	suite *Suite
	op    *Op
	impl  string
	size  int
}

// String implements fmt.Stringer.
func (c caseID) String() string {
	return fmt.Sprintf("%s/%s %s %s", c.suite.Name, c.op.Name, c.impl, FormatSize(c.size))
}

// cases lists cfg's cases in run order: suite, size, op, implementation
// (so that each size's boltmesh and stdnet runs are adjacent in time).
func (w *world) cases(cfg Config) []caseID {
	var out []caseID
	n := w.ctl.t.WorldSize()
	for _, name := range cfg.Suites {
		s := Lookup(name)
		if n < s.MinRanks {
			continue
		}
		for _, size := range cfg.sizesFor(s) {
			for i := range s.Ops {
				for _, impl := range cfg.Impls() {
					if s.Impls != nil && !slices.Contains(s.Impls, impl) {
						continue
					}
					out = append(out, caseID{s, &s.Ops[i], impl, size})
				}
			}
		}
	}
	return out
}
