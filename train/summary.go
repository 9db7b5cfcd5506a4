package train

import "github.com/boltmesh/boltmesh/engine/collective"

// RankSummary is one rank's totals over a run.
type RankSummary struct {
	Rank         int     `json:"rank"`
	Steps        int     `json:"steps"`         // steps run
	Contributed  int     `json:"contributed"`   // steps whose gradient holds this rank's
	Resyncs      int     `json:"resyncs"`       // times it took rank 0's weights
	TestAccuracy float64 `json:"test_accuracy"` // after the last epoch
	ComputeS     float64 `json:"compute_s"`
	CommS        float64 `json:"comm_s"`
}

// summaryFields is the number of values each rank adds to Summaries'
// allreduce.
const summaryFields = 6

// Summaries gathers every rank's totals over eps (this rank's epochs, as
// Run returned them), in rank order. Every rank must call it.
func (tr *Trainer) Summaries(eps []Epoch) ([]RankSummary, error) {
	v := make([]float64, tr.world*summaryFields)
	mine := v[tr.rank*summaryFields:]
	for _, ep := range eps {
		mine[0] += float64(ep.Steps)
		mine[1] += float64(ep.Contributed)
		mine[2] += float64(ep.Resyncs)
		mine[4] += ep.ComputeS
		mine[5] += ep.CommS
	}
	if len(eps) > 0 {
		mine[3] = eps[len(eps)-1].TestAccuracy
	}
	if err := collective.AllReduce(tr.comm, v, collective.Sum); err != nil {
		return nil, err
	}
	out := make([]RankSummary, tr.world)
	for r := range out {
		f := v[r*summaryFields:]
		out[r] = RankSummary{Rank: r, Steps: int(f[0]), Contributed: int(f[1]), Resyncs: int(f[2]), TestAccuracy: f[3], ComputeS: f[4], CommS: f[5]}
	}
	return out, nil
}
