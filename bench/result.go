package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Schema is the value of Report.Schema.
const Schema = "boltmesh-bench/v1"

// Impl names: the transport under test and the baselines.
const (
	ImplBoltmesh = "boltmesh"
	ImplStdnet   = "stdnet"
)

// Host describes the machine that produced a Report (rank 0's).
type Host struct {
	OS       string    `json:"os"`
	Arch     string    `json:"arch"`
	CPUs     int       `json:"cpus"`
	Go       string    `json:"go"`
	Time     time.Time `json:"time"`
	Hostname string    `json:"hostname,omitempty"`
	// Congestion is the kernel's default TCP congestion control (Linux),
	// which the stdnet baseline's connections use; boltmesh's choose
	// their own (engine.Options.Congestion).
	Congestion string `json:"congestion,omitempty"`
}

// ThisHost describes this machine now.
func ThisHost() Host {
	name, _ := os.Hostname()
	return Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version(), Time: time.Now().UTC(), Hostname: name, Congestion: systemCongestion()}
}

// systemCongestion returns the kernel's default TCP congestion control, or
// "" where it cannot be read.
func systemCongestion() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Result is one benchmark case: one op of one suite, on one implementation,
// at one message size. Times are rank 0's, in microseconds; bandwidths are
// in GB/s (1e9 bytes per second). Transport is what carried the case:
// Config.Transport for boltmesh, "tcp" for stdnet; SingleCopy and Sealed
// are Config's, for boltmesh.
type Result struct {
	Suite string  `json:"suite"`
	Op    string  `json:"op"`
	Impl  string  `json:"impl"`
	Ranks int     `json:"ranks"`
	Bytes int64   `json:"bytes"`
	Iters int     `json:"iters"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P99   float64 `json:"p99_us"`
	Max   float64 `json:"max_us"`
	Mean  float64 `json:"mean_us"`
	AlgBW float64 `json:"algbw_gbps"`
	BusBW float64 `json:"busbw_gbps"`
	// MsgRate is messages per second, every pair's together, for ops
	// that count messages (Op.Messages): their number per iteration
	// over the mean time.
	MsgRate   float64 `json:"msg_rate,omitempty"`
	Transport string  `json:"transport,omitempty"`
	// SingleCopy is how large messages moved between neighbours
	// (Config.SingleCopy); Sealed, which network links were sealed
	// (Config.Sealed).
	SingleCopy string `json:"single_copy,omitempty"`
	Sealed     string `json:"sealed,omitempty"`
	// Error is set when a rank's data check failed in this case.
	Error string `json:"error,omitempty"`
}

// Key identifies the case a Result measured, without the implementation.
func (r Result) Key() string { return fmt.Sprintf("%s/%s/%d", r.Suite, r.Op, r.Bytes) }

// Report is the boltmesh-bench/v1 document written by boltmesh bench --json.
type Report struct {
	Schema  string   `json:"schema"`
	Host    Host     `json:"host"`
	Results []Result `json:"results"`
}

// Failed returns the results whose data check failed.
func (r *Report) Failed() []Result {
	var bad []Result
	for _, x := range r.Results {
		if x.Error != "" {
			bad = append(bad, x)
		}
	}
	return bad
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: encode report: %w", err)
	}
	return nil
}

// ReadReport decodes a Report and validates it.
func ReadReport(rd io.Reader) (*Report, error) {
	var r Report
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("bench: decode report: %w", err)
	}
	return &r, r.Validate()
}

// Validate checks the schema name, the host and every result: known
// implementation, positive ranks, iterations and times, percentiles in
// order, and bandwidths consistent with the bytes and the mean time.
func (r *Report) Validate() error {
	if r.Schema != Schema {
		return fmt.Errorf("%w: schema %q, want %q", ErrInvalidReport, r.Schema, Schema)
	}
	if r.Host.OS == "" || r.Host.CPUs <= 0 || r.Host.Go == "" || r.Host.Time.IsZero() {
		return fmt.Errorf("%w: incomplete host %+v", ErrInvalidReport, r.Host)
	}
	if len(r.Results) == 0 {
		return fmt.Errorf("%w: no results", ErrInvalidReport)
	}
	for i, x := range r.Results {
		if err := x.validate(); err != nil {
			return fmt.Errorf("%w: result %d (%s %s): %v", ErrInvalidReport, i, x.Impl, x.Key(), err)
		}
	}
	return nil
}
