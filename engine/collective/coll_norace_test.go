//go:build !race

package collective_test

// collRace reports a race-detector build (see coll_race_test.go).
const collRace = false
