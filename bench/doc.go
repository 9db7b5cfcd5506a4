// Package bench will hold boltmesh's benchmark harness (warm-up, timing,
// percentiles, algbw/busbw and the boltmesh-bench/v1 JSON schema) shared by
// the CLI and go test -bench. Until it lands, the engine benchmarks
// (go test -bench . ./engine, or make bench) measure boltmesh against a
// plain net.Conn baseline.
package bench
