//go:build !linux

package engine

// runnableThreads reports nothing here: no dynamic crowding (crowd.go).
func runnableThreads() (int, bool) { return 0, false }
