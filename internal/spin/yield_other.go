//go:build !linux

package spin

// Yield would give this thread's core to another runnable thread; it
// does nothing here, and crowded machines do not spin (CrowdedSpin).
func Yield() {}

// CrowdedSpin is Options.Spin's default on a crowded machine (more ranks
// than cores): no spinning, since a spin that cannot give its core up
// takes it from the rank it waits for.
const CrowdedSpin = -1
