package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/boltmesh/boltmesh/train"
)

// printEpoch prints one epoch's line: loss, accuracy, and the mean step
// time split into compute and communication.
func printEpoch(w io.Writer, ep train.Epoch) {
	per := func(s float64) time.Duration {
		if ep.Steps == 0 {
			return 0
		}
		return time.Duration(s / float64(ep.Steps) * 1e9).Round(time.Microsecond)
	}
	fmt.Fprintf(w, "epoch %d  loss %.4f  test accuracy %.2f%%  step %v (compute %v, comm %v)  at %.1fs\n",
		ep.Epoch, ep.Loss, 100*ep.TestAccuracy, per(ep.ComputeS+ep.CommS), per(ep.ComputeS), per(ep.CommS), ep.ElapsedS)
}

// output prints every rank's totals and writes --json and --plot.
func (r *trainRun) output(rep *trainReport) error {
	fmt.Fprintln(r.stdout, "rank  contributed  resyncs  test accuracy  compute    comm")
	for _, s := range rep.Ranks {
		fmt.Fprintf(r.stdout, "%4d  %5d/%-5d  %7d  %12.2f%%  %6.2fs  %6.2fs\n",
			s.Rank, s.Contributed, s.Steps, s.Resyncs, 100*s.TestAccuracy, s.ComputeS, s.CommS)
	}
	var errs []error
	if r.tf.json != "" {
		errs = append(errs, writeFile(r.tf.json, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}))
	}
	if r.tf.plot != "" {
		errs = append(errs, writeTrainPlots(r.tf.plot, rep))
	}
	return errors.Join(errs...)
}
