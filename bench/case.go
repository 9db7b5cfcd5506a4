package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strconv"
	"time"
)

// labels are the profile labels of a case's loops.
func (c caseID) labels(ctx context.Context) context.Context {
	return pprof.WithLabels(ctx, pprof.Labels("op", c.op.Name, "suite", c.suite.Name, "impl", c.impl, "size", strconv.Itoa(c.size)))
}

// runCase runs one case on this rank in step with the others; it returns
// rank 0's result (nil elsewhere, or when the case could not start).
func (w *world) runCase(cfg Config, c caseID) (*Result, error) {
	ctx := c.labels(context.Background())
	body, err := c.op.Start(&Case{Suite: c.suite.Name, Op: c.op.Name, Impl: c.impl, Size: c.size, EP: w.eps[c.impl], Ctx: ctx})
	verdict, aerr := w.ctl.agree(errMsg(err))
	if aerr != nil {
		return nil, aerr
	}
	if verdict != "" {
		if body != nil {
			body.Finish(0)
		}
		return nil, fmt.Errorf("%w: start: %s", errAborted, verdict)
	}
	pprof.SetGoroutineLabels(ctx)
	defer pprof.SetGoroutineLabels(context.Background())
	out, err := w.loops(cfg, c, body)
	if err != nil {
		return nil, err
	}
	return w.finish(c, body, out)
}

// timed is the outcome of a case's loops on this rank.
type timed struct {
	st    Stats
	check error // the first data-check failure
}

// loops runs the warm-up and the timed loop. A data-check failure is kept
// in the outcome and the loops go on; any other error ends the run.
func (w *world) loops(cfg Config, c caseID, body Body) (timed, error) {
	var out timed
	warm := cfg.Plan.warmups(c.size)
	var spent time.Duration
	for i := -warm; i < 0; i++ {
		d, err := step(body, i, &out.check)
		if err != nil {
			return out, err
		}
		spent += d
	}
	iters, err := w.ctl.bcastInt(cfg.Plan.iters(spent / time.Duration(warm)))
	if err == nil && !cfg.Plan.countOK(iters) {
		err = fmt.Errorf("bench: rank 0 asked for %d timed iterations, which plan %+v does not allow", iters, cfg.Plan)
	}
	if err == nil {
		err = w.ctl.barrier()
	}
	if err != nil {
		return out, err
	}
	lat := make([]time.Duration, iters)
	for i := range lat {
		if lat[i], err = step(body, i, &out.check); err != nil {
			return out, err
		}
	}
	out.st = Summarize(lat)
	return out, nil
}

// step prepares iteration i (untimed), runs it and returns its time,
// keeping the first data-check failure in *check.
func step(body Body, i int, check *error) (time.Duration, error) {
	if p, ok := body.(Preparer); ok {
		if err := p.Prepare(i); err != nil {
			return 0, err
		}
	}
	t := time.Now()
	err := body.Iter(i)
	d := time.Since(t)
	if errors.Is(err, ErrCheck) {
		if *check == nil {
			*check = err
		}
		err = nil
	}
	return d, err
}

// finish runs the body's final checks, agrees on the outcome and returns
// rank 0's result.
func (w *world) finish(c caseID, body Body, out timed) (*Result, error) {
	if err := w.ctl.barrier(); err != nil {
		return nil, err
	}
	err := body.Finish(out.st.N)
	if err != nil && !errors.Is(err, ErrCheck) {
		return nil, err
	}
	if out.check == nil {
		out.check = err
	}
	verdict, err := w.ctl.agree(errMsg(out.check))
	if err != nil || w.ctl.t.Rank() != 0 {
		return nil, err
	}
	res := w.result(c, out.st)
	res.Error = verdict
	return &res, nil
}

// result builds a Result from rank 0's timings.
func (w *world) result(c caseID, st Stats) Result {
	n := w.ctl.t.WorldSize()
	res := Result{
		Suite: c.suite.Name, Op: c.op.Name, Impl: c.impl, Ranks: n, Bytes: int64(c.size), Iters: st.N,
		P50: Micros(st.P50), P90: Micros(st.P90), P99: Micros(st.P99), Max: Micros(st.Max), Mean: Micros(st.Mean),
		Transport: w.transport, SingleCopy: w.singleCopy, Sealed: w.sealed,
	}
	if c.impl == ImplStdnet {
		res.Transport, res.SingleCopy, res.Sealed = "tcp", "", ""
	}
	res.AlgBW = GBps(res.Bytes, res.Mean)
	res.BusBW = res.AlgBW
	if c.op.BusFactor != nil {
		res.BusBW *= c.op.BusFactor(n)
	}
	if c.op.Messages != nil && res.Mean > 0 {
		res.MsgRate = float64(c.op.Messages(n)) / (res.Mean * 1e-6)
	}
	return res
}

// errMsg is err's text, or "" for nil.
func errMsg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
