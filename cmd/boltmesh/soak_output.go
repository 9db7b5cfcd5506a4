package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// started is when this process started (its package initialization):
// the start of a launched rank's setup time.
var started = time.Now()

func processStart() time.Time { return started }

// output prints rep and writes it as JSON with --json.
func (r *soakRun) output(rep *soakReport) error {
	writeSoak(r.stdout, rep)
	if r.sf.json == "" {
		return nil
	}
	return writeFile(r.sf.json, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
}

// writeSoak prints the run's figures and a line per rank.
func writeSoak(w io.Writer, rep *soakReport) {
	fmt.Fprintf(w, "== soak · %d ranks · %s · %d B allreduce + barrier ==\n", rep.World, rep.Transport, rep.Bytes)
	fmt.Fprintf(w, "setup %.2f s · %d iterations in %.1f s (%.0f/s) · allreduce p50 %s µs · barrier p50 %s µs\n",
		rep.Setup, rep.Iters, rep.Duration, float64(rep.Iters)/max(rep.Duration, 1e-9), micro(rep.AllReduce), micro(rep.Barrier))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tsetup s\titers\tbad\tfds\tpeak\tthreads\tpeak\tRSS MiB\tpeak\t")
	var fds, thr, rss, peak int64
	for _, x := range rep.Ranks {
		fmt.Fprintf(tw, "%d\t%.2f\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.Rank, x.Setup, x.Iters, x.Bad,
			count(int64(x.FDs)), count(int64(x.PeakFDs)), count(int64(x.Threads)), count(int64(x.PeakThr)), mib(x.RSS), mib(x.PeakRSS))
		fds, thr, rss, peak = fds+int64(x.FDs), thr+int64(x.Threads), rss+x.RSS, peak+x.PeakRSS
	}
	if n := int64(len(rep.Ranks)); n > 0 && fds >= 0 {
		fmt.Fprintf(tw, "mean\t\t\t\t%s\t\t%s\t\t%s\t%s\t\n", count(fds/n), count(thr/n), mib(rss/n), mib(peak/n))
	}
	tw.Flush()
}

// count formats n, or "-" if unknown (negative).
func count(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// mib formats bytes in MiB, or "-" if unknown.
func mib(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)/(1<<20))
}
