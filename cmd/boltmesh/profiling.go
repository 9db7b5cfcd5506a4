package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
)

// Sampling rates while a mutex or block profile is recorded.
const (
	mutexFraction = 10   // one contention event in 10
	blockRate     = 1000 // one blocking event per µs blocked
)

// startProfiling starts the profiles pf asks for and returns the function
// that writes them. Ranks other than 0 add ".rankN" to the file names.
func startProfiling(pf *profFlags, rank int, stderr io.Writer) (stop func() error, err error) {
	name := func(f string) string {
		if f == "" || rank == 0 {
			return f
		}
		return fmt.Sprintf("%s.rank%d", f, rank)
	}
	var stops []func() error
	stop = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	if pf.http != "" && rank == 0 {
		s, err := servePprof(pf.http, stderr)
		if err != nil {
			return stop, err
		}
		stops = append(stops, s)
	}
	if pf.cpu != "" {
		s, err := startCPU(name(pf.cpu))
		if err != nil {
			return stop, errors.Join(err, stop())
		}
		stops = append(stops, s)
	}
	for _, p := range []struct{ file, kind string }{{pf.mem, "allocs"}, {pf.mutex, "mutex"}, {pf.block, "block"}} {
		if p.file != "" {
			stops = append(stops, startLookup(name(p.file), p.kind))
		}
	}
	return stop, nil
}

func startCPU(file string) (func() error, error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := rpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		rpprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// startLookup enables the sampling a named profile needs and returns the
// function that writes it.
func startLookup(file, kind string) func() error {
	switch kind {
	case "mutex":
		runtime.SetMutexProfileFraction(mutexFraction)
	case "block":
		runtime.SetBlockProfileRate(blockRate)
	}
	return func() error {
		if kind == "allocs" {
			runtime.GC()
		}
		f, err := os.Create(file)
		if err != nil {
			return fmt.Errorf("%s profile: %w", kind, err)
		}
		err = rpprof.Lookup(kind).WriteTo(f, 0)
		return errors.Join(err, f.Close())
	}
}

// servePprof serves net/http/pprof at addr until stopped.
func servePprof(addr string, stderr io.Writer) (func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "pprof: http://%s/debug/pprof/\n", ln.Addr())
	return srv.Close, nil
}
