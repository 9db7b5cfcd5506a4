// Package racedetect reports whether the race detector is on, for the
// tests of boltmesh's packages: under it sync.Pool drops items at random
// (so allocation counts mean nothing) and everything runs several times
// slower.
package racedetect
