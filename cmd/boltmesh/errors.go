package main

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors of the CLI. Test for them with errors.Is; the typed
// errors below wrap them.
var (
	// errUsage marks errors in the command line (exit status 2).
	errUsage = errors.New("usage")
	// errMeshKey means a rendezvous message fails the mesh key check: the
	// sender has another key, or one side has none (errNoKeyProof,
	// errUnexpectedKeyProof).
	errMeshKey = errors.New("mesh key mismatch")
	// errNoKeyProof means a rendezvous message carries no MAC while this
	// side has a mesh key: the sender has no key (a stranger, or a rank
	// not given the run's). It wraps errMeshKey.
	errNoKeyProof = fmt.Errorf("%w: the message carries no key proof, but this run has a mesh key", errMeshKey)
	// errUnexpectedKeyProof means a rendezvous message carries a MAC while
	// this side has no mesh key: the sender was given a key this side was
	// not. It wraps errMeshKey.
	errUnexpectedKeyProof = fmt.Errorf("%w: the message carries a key proof, but this run has no mesh key", errMeshKey)
	// errReplay means a rendezvous message answers a nonce other than the
	// one this side sent: it was recorded from another rendezvous.
	errReplay = errors.New("rendezvous message answers another nonce (replayed)")
	// errLineTooLong means a rendezvous line exceeded its bound before its
	// newline; the connection is dropped without reading more.
	errLineTooLong = errors.New("rendezvous line too long")
	// errNoChallenge means rank 0 closed the connection before its
	// challenge: it was busy, or not yet serving; the rank dials again.
	errNoChallenge = errors.New("rank 0 closed the connection before its challenge")
	// errRefused means rank 0 refused this rank's hello.
	errRefused = errors.New("rank 0 refused the hello")
	// errBadHello means a hello names a world, rank or address that does
	// not fit this rendezvous.
	errBadHello = errors.New("hello does not fit this rendezvous")
	// errSilent means what a rank reached at rank 0's rendezvous address
	// sent no challenge: it may be a TCPStore, which never speaks first.
	errSilent = errors.New("no challenge at the rendezvous address")
	// errBadEntry means a rank's entry in torchrun's TCPStore does not fit
	// this rendezvous: another world size, or no address.
	errBadEntry = errors.New("store entry does not fit this rendezvous")
	// errNoSharedMemory means, with --transport shm, that a rank on rank
	// 0's host was not reached over shared memory.
	errNoSharedMemory = errors.New("--transport shm: ranks on this host not reached over shared memory")
	// errSoakBad means boltmesh soak saw allreduce results that were not
	// the sums of what the ranks contributed.
	errSoakBad = errors.New("wrong allreduce results")
)

// usageErr returns a usage error with a message.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// sharedMemoryError names the ranks on rank 0's host that --transport
// shm wanted reached over shared memory and were not.
type sharedMemoryError struct {
	Ranks []int
}

func (e *sharedMemoryError) Error() string {
	return fmt.Sprintf("%v: %s (reached over TCP instead; --transport auto allows that)", errNoSharedMemory, rankList(e.Ranks))
}

// Unwrap returns errNoSharedMemory.
func (e *sharedMemoryError) Unwrap() error { return errNoSharedMemory }

// flagError is a flag's value refused before anything starts. It prints as
// one line naming the flag: "--timeout 0s: must be positive".
type flagError struct {
	Flag    string // without dashes
	Value   string
	Problem string
}

func (e *flagError) Error() string {
	return fmt.Sprintf("--%s %s: %s", e.Flag, quoteValue(e.Value), e.Problem)
}

// Unwrap returns errUsage.
func (e *flagError) Unwrap() error { return errUsage }

// flagErr returns a *flagError.
func flagErr(flag, value, format string, args ...any) error {
	return &flagError{Flag: flag, Value: value, Problem: fmt.Sprintf(format, args...)}
}

// quoteValue quotes a flag value when it would not read as one word.
func quoteValue(v string) string {
	for _, r := range v {
		if r <= ' ' || r == '"' || r == '\'' || r > '~' {
			return strconv.Quote(v)
		}
	}
	if v == "" {
		return `""`
	}
	return v
}

// errAnchorOutput is what parseAnchor says of output it cannot read.
var errAnchorOutput = errors.New("the anchor printed no line of bytes, p50, algbw, busbw and p99")
