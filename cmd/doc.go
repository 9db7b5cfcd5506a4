// Package cmd holds boltmesh's commands; cmd/boltmesh, the CLI with
// `boltmesh bench`, lands with the benchmark work. Until then `make bench`
// runs the engine benchmarks.
package cmd
