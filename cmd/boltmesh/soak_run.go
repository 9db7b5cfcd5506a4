package main

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// soakSchema names the --json format of boltmesh soak.
const soakSchema = "boltmesh-soak/v1"

// soakReport is what rank 0 prints and writes with --json.
type soakReport struct {
	Schema    string  `json:"schema"`
	Host      string  `json:"host"`
	CPUs      int     `json:"cpus"`
	World     int     `json:"world"`
	Transport string  `json:"transport"`
	Bytes     int     `json:"bytes"`
	Duration  float64 `json:"duration_s"`
	// Setup is rank 0's time from the launch of the ranks (its start, if
	// a launcher started them) to the end of the first barrier.
	Setup     float64    `json:"setup_s"`
	Iters     int        `json:"iters"`
	AllReduce float64    `json:"allreduce_p50_us"`
	Barrier   float64    `json:"barrier_p50_us"`
	Ranks     []soakRank `json:"ranks"`
}

// soakRank is one rank's account of the run. Peaks are sampled once a
// second (PeakRSS is the kernel's high-water mark); -1 where the system
// does not say.
type soakRank struct {
	Rank    int     `json:"rank"`
	Setup   float64 `json:"setup_s"`
	Iters   int     `json:"iters"`
	Bad     int     `json:"bad_results"`
	FDs     int     `json:"fds"`
	PeakFDs int     `json:"peak_fds"`
	Threads int     `json:"threads"`
	PeakThr int     `json:"peak_threads"`
	RSS     int64   `json:"rss_bytes"`
	PeakRSS int64   `json:"peak_rss_bytes"`
}

// soakFields is the number of float64 words a rank's soakRank travels
// in to rank 0.
const soakFields = 10

func (s soakRank) words() []float64 {
	return []float64{float64(s.Rank), s.Setup, float64(s.Iters), float64(s.Bad), float64(s.FDs), float64(s.PeakFDs),
		float64(s.Threads), float64(s.PeakThr), float64(s.RSS), float64(s.PeakRSS)}
}

func soakRankOf(w []float64) soakRank {
	return soakRank{Rank: int(w[0]), Setup: w[1], Iters: int(w[2]), Bad: int(w[3]), FDs: int(w[4]), PeakFDs: int(w[5]),
		Threads: int(w[6]), PeakThr: int(w[7]), RSS: int64(w[8]), PeakRSS: int64(w[9])}
}

// run joins the mesh (starting the local ranks first in a local run),
// soaks it and, on rank 0, prints and writes the report.
func (r *soakRun) run() error {
	start := time.Now()
	var rep *soakReport
	err := runLocal(r.mf, r.pf, r.m, r.opts.MeshKey, r.stderr, r.sf.childArgs(), func(rln net.Listener) (err error) {
		rep, err = r.runRank(rln, start)
		return err
	})
	if rep != nil {
		err = errors.Join(err, r.output(rep))
	}
	return err
}

// runRank joins the mesh, runs the loop and gathers every rank's account
// at rank 0 (the others return a nil report).
func (r *soakRun) runRank(rln net.Listener, start time.Time) (*soakReport, error) {
	if r.m.source != "local" || r.m.rank != 0 {
		start = processStart()
	}
	watch := newResourceWatch()
	defer watch.stop()
	j, used, err := joinChecked(r.mf, r.m, r.opts, rln)
	if err != nil {
		return nil, err
	}
	defer j.t.Close()
	c, err := collective.New(j.t, collective.Options{})
	if err != nil {
		return nil, err
	}
	if err := j.t.Barrier(); err != nil {
		return nil, fmt.Errorf("rank %d: first barrier: %w", r.m.rank, err)
	}
	me := soakRank{Rank: r.m.rank, Setup: time.Since(start).Seconds()}
	loop := soakLoop{c: c, rank: r.m.rank, world: r.m.world, n: r.sf.bytes / 4, duration: r.sf.duration, barrier: j.t.Barrier}
	if err := loop.run(); err != nil {
		return nil, fmt.Errorf("rank %d, iteration %d: %w", r.m.rank, loop.iters, err)
	}
	me.Iters, me.Bad = loop.iters, loop.bad
	watch.fill(&me)
	all := make([]float64, soakFields*r.m.world)
	counts := make([]int, r.m.world)
	for i := range counts {
		counts[i] = soakFields
	}
	if err := collective.Gather(c, 0, me.words(), all, counts); err != nil {
		return nil, fmt.Errorf("rank %d: gathering the accounts: %w", r.m.rank, err)
	}
	var bad error
	if loop.bad > 0 {
		bad = fmt.Errorf("rank %d: %w: %d of %d, first: %s", r.m.rank, errSoakBad, loop.bad, loop.iters, loop.first)
	}
	if r.m.rank != 0 {
		return nil, bad
	}
	rep := &soakReport{Schema: soakSchema, Host: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), World: r.m.world,
		Transport: used.name(), Bytes: r.sf.bytes, Duration: loop.elapsed.Seconds(), Setup: me.Setup, Iters: loop.iters,
		AllReduce: bench.Micros(bench.Summarize(loop.reduce).P50), Barrier: bench.Micros(bench.Summarize(loop.bar).P50)}
	for i := range r.m.world {
		rep.Ranks = append(rep.Ranks, soakRankOf(all[i*soakFields:(i+1)*soakFields]))
		if rep.Ranks[i].Bad > 0 && bad == nil {
			bad = fmt.Errorf("rank %d: %w: %d of %d", i, errSoakBad, rep.Ranks[i].Bad, rep.Ranks[i].Iters)
		}
	}
	return rep, bad
}

// soakLoop is the timed loop of one rank: an allreduce of n float32 and
// one stop word, then a barrier, until rank 0's stop.
type soakLoop struct {
	c           *collective.Comm
	rank, world int
	n           int
	duration    time.Duration
	barrier     func() error

	iters, bad  int
	first       string // the first wrong result
	reduce, bar []time.Duration
	elapsed     time.Duration
}

// soakValue is rank r's element j in iteration i: small integers, so
// that every sum is exact in float32 whatever the order of the adds.
func soakValue(r, i, j int) float32 { return float32((r*7 + i*3 + j) % 61) }

func (l *soakLoop) run() error {
	data := make([]float32, l.n+1)
	start := time.Now()
	for i := 0; ; i++ {
		for j := range l.n {
			data[j] = soakValue(l.rank, i, j)
		}
		data[l.n] = 0
		if l.rank == 0 && time.Since(start) >= l.duration {
			data[l.n] = 1
		}
		t := time.Now()
		if err := collective.AllReduce(l.c, data, collective.Sum); err != nil {
			return err
		}
		l.reduce = append(l.reduce, time.Since(t))
		l.check(i, data)
		t = time.Now()
		if err := l.barrier(); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
		l.bar = append(l.bar, time.Since(t))
		l.iters++
		if data[l.n] != 0 {
			l.elapsed = time.Since(start)
			return nil
		}
	}
}

// check compares iteration i's result with the sum it must be.
func (l *soakLoop) check(i int, data []float32) {
	for j := range l.n {
		var want float32
		for r := range l.world {
			want += soakValue(r, i, j)
		}
		if data[j] != want {
			if l.bad == 0 {
				l.first = fmt.Sprintf("iteration %d element %d: %v, want %v", i, j, data[j], want)
			}
			l.bad++
			return
		}
	}
	if s := data[l.n]; s != 0 && s != 1 {
		if l.bad == 0 {
			l.first = fmt.Sprintf("iteration %d: stop word %v, want 0 or 1", i, s)
		}
		l.bad++
	}
}

// resourceWatch samples this process's fds and threads once a second,
// keeping their peaks.
type resourceWatch struct {
	mu             sync.Mutex
	peakFD, peakTh int
	done           chan struct{}
	wg             sync.WaitGroup
}

func newResourceWatch() *resourceWatch {
	w := &resourceWatch{done: make(chan struct{})}
	w.sample()
	w.wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
				w.sample()
			}
		}
	})
	return w
}

func (w *resourceWatch) sample() { w.note(readUsage()) }

// note folds u into the peaks.
func (w *resourceWatch) note(u procUsage) {
	w.mu.Lock()
	w.peakFD, w.peakTh = max(w.peakFD, u.fds), max(w.peakTh, u.threads)
	w.mu.Unlock()
}

// fill reads the figures once more, into the peaks and into s.
func (w *resourceWatch) fill(s *soakRank) {
	u := readUsage()
	w.note(u)
	w.mu.Lock()
	defer w.mu.Unlock()
	s.FDs, s.PeakFDs, s.Threads, s.PeakThr, s.RSS, s.PeakRSS = u.fds, w.peakFD, u.threads, w.peakTh, u.rss, u.peakRSS
}

func (w *resourceWatch) stop() {
	close(w.done)
	w.wg.Wait()
}
