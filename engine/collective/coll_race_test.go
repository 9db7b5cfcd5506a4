//go:build race

package collective_test

// collRace reports a race-detector build, in which sync.Pool drops items
// at random (the transport's pooled receive requests then get allocated
// afresh), so allocation counts mean nothing.
const collRace = true
