// Package spin is how long a rank's waits spin before they sleep, and
// what the machine lends them: a per-peer Gauge that cuts the spin of
// waits that outlast it, Yield (the core given to another thread between
// polls), CrowdedSpin (the spin of a machine with more ranks than cores)
// and Available, the cores this process may use (its affinity mask and
// its cgroup's quota).
//
// Lock rule: none; a Gauge is updated with atomics (see Gauge), and
// Available is read once at start.
package spin
