package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/boltmesh/boltmesh/bench"
)

// writeFile creates file and fills it with write.
func writeFile(file string, write func(io.Writer) error) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", file, err)
	}
	return f.Close()
}

// csvHeader names the CSV columns: the JSON field names.
var csvHeader = []string{"suite", "op", "impl", "ranks", "bytes", "iters", "p50_us", "p90_us", "p99_us", "max_us", "mean_us", "algbw_gbps", "busbw_gbps", "msg_rate", "transport", "error"}

// writeCSV writes one row per result.
func writeCSV(w io.Writer, rep *bench.Report) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rep.Results {
		cw.Write([]string{r.Suite, r.Op, r.Impl, strconv.Itoa(r.Ranks), strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.Iters),
			f(r.P50), f(r.P90), f(r.P99), f(r.Max), f(r.Mean), f(r.AlgBW), f(r.BusBW), f(r.MsgRate), r.Transport, r.Error})
	}
	cw.Flush()
	return errors.Join(cw.Error())
}
