// Package proflabel saves and restores the calling goroutine's profile
// labels exactly, which runtime/pprof cannot: it sets a goroutine's
// labels from a context (pprof.SetGoroutineLabels) but never reads them
// back, so a call that labels the goroutine for its own span could only
// restore the labels of a context it was given, and a caller that set
// its labels another way (or passed no context) lost them.
//
// It reaches the two functions that runtime/pprof itself uses, through
// go:linkname: the runtime keeps them for that use by other packages
// ("Do not remove or change the type signature", go.dev/issue/67401).
// The saved value is opaque: only Restore reads it.
package proflabel

import (
	_ "runtime/pprof" // the runtime's functions are linked under its name
	"unsafe"
)

//go:linkname getProfLabel runtime/pprof.runtime_getProfLabel
func getProfLabel() unsafe.Pointer

//go:linkname setProfLabel runtime/pprof.runtime_setProfLabel
func setProfLabel(labels unsafe.Pointer)

// Saved is a goroutine's profile labels as Save found them. The zero
// Saved is no labels.
type Saved struct{ p unsafe.Pointer }

// Save returns the calling goroutine's profile labels.
func Save() Saved { return Saved{getProfLabel()} }

// Restore gives the calling goroutine the labels s holds.
func Restore(s Saved) { setProfLabel(s.p) }
