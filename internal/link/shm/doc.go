// Package shm is the shared-memory link kind: a Pipe is a connection's
// byte stream in memory that two processes on one host map, with a Unix
// socket beside it for a bell, and an ioloop.Stream, so that the event
// loop and everything above it read and write it as they would a socket.
// The engine creates a pair's memory and bells (internal/shm passes them
// between the processes), prepares the memory (InitPipe) and registers
// each side it opens (Open, ioloop.Loop.RegisterStream). A Mailbox, in
// the same memory, carries two neighbours' small exchanges and barrier
// signals without a frame.
package shm
