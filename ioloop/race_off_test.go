//go:build !race

package ioloop_test

const raceEnabled = false
