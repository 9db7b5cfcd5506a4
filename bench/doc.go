// Package bench is boltmesh's benchmark harness, shared by the CLI
// (boltmesh bench) and tests: warm-up, iteration counts chosen by size or
// duration, per-iteration timing, percentiles, algbw/busbw as nccl-tests
// define them, and results that serialize to the boltmesh-bench/v1 JSON
// schema (see Report).
//
// A benchmark run involves every rank of a World: one boltmesh mesh that
// carries both the boltmesh workload and the harness's control messages,
// and, unless the baseline is disabled, a stdnet mesh (package
// bench/stdnet: the same workloads over plain net.Conn; for RPC, Go's
// net/rpc). Every rank calls
// Run with the same Config; rank 0's Config wins (Run broadcasts it), so
// other ranks may pass a zero Config. Ranks then execute the same cases in
// lockstep and rank 0 collects the results and every rank's data-check
// failures.
//
// Suites are registered by name with Register, one file per suite
// (suite_p2p.go, suite_msgrate.go, suite_putget.go, suite_barrier.go,
// suite_allreduce.go, suite_broadcast.go, suite_deadline.go,
// suite_rooted.go, suite_rpc.go).
// Adding a suite is adding one such file: a Suite value with its ops,
// registered in an init function.
package bench
