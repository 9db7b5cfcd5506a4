package main

import (
	"fmt"
	"io"
)

// A run's mesh key: the one given (--key-file, else $BOLTMESH_KEY), else,
// in a local run, a new one that rank 0 makes (runKey) and hands to the
// ranks it starts in their environment (childEnv): such a run controls
// every rank, so it has no reason to let anyone else join. Ranks placed by
// a launcher or the flags have no such rank 0, and without a key given
// each warns (warnKeyless), on loopback too: any process on the machine
// can take a slot there.

// runKey returns this rank's mesh key: meshKey's, else in a local run
// (m.source "local", this process being rank 0) a new one (newKey), else
// nil (no key).
func runKey(keyFile string, m membership, getenv func(string) string) ([]byte, error) {
	key, err := meshKey(keyFile, getenv)
	if err != nil || key != nil || m.source != "local" {
		return key, err
	}
	return newKey(), nil
}

// keylessWarning is what a rank placed by a launcher or the flags without
// a mesh key prints, once; its %d is the rank.
const keylessWarning = `boltmesh: rank %d has NO MESH KEY: any process on this machine (and, beyond loopback, any host that reaches it) can join this run as a rank, read every heap and forge messages.
boltmesh: give every rank the same key: boltmesh keygen FILE, then --key-file FILE on every rank, or BOLTMESH_KEY="$(cat FILE)" exported to every rank (mpirun -x BOLTMESH_KEY).
`

// keylessLaunch reports whether rank m, with mesh key key, is open to
// strangers: it has no key, shares its run with other ranks, and was not
// started by a local run (whose ranks always have a key).
func keylessLaunch(m membership, key []byte) bool {
	return len(key) == 0 && m.source != "local" && m.world > 1
}

// warnKeyless prints keylessWarning to w if keylessLaunch. runLocal calls
// it once per rank.
func warnKeyless(w io.Writer, m membership, key []byte) {
	if keylessLaunch(m, key) {
		fmt.Fprintf(w, keylessWarning, m.rank)
	}
}
