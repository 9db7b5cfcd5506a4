// Package cmd holds boltmesh's commands. cmd/boltmesh is the CLI:
// boltmesh bench (the benchmark against the stdnet baseline, on local
// processes or across machines), boltmesh rank (a participant that joins
// a mesh and follows rank 0) and boltmesh profile (where a CPU profile's
// time went).
package cmd
