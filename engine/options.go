package engine

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/tcp"
)

// Options configures a NetTransport. The zero value selects every default.
// The constructors (Bind, FromListener, CoordinatorListen, WorkerDial)
// validate it once and return an error naming the first bad field;
// Options.Validate makes the same check without building anything.
type Options struct {
	// MaxFrame bounds a frame's payload in bytes; longer sends fail and a
	// peer that sends one is dropped. Default 1 GiB.
	MaxFrame uint64
	// MaxQueuedBytes bounds what one peer can make this rank hold: its
	// messages that arrived before their receive and its RPC requests not
	// yet taken by the RPC layer, each counted at frame.Cost (its payload
	// rounded up to a power of two, plus frame.MsgOverhead for its queue
	// entry and tag state). It is the flow-control window this rank grants
	// the peer (see frame/spec.md): a sender waits for credit rather than
	// exceed it, and a peer that exceeds it is dropped (ErrFlowControl).
	// Nothing is ever left unread for lack of memory, and one-sided
	// operations and control frames, which have a stream of their own,
	// never wait behind unreceived messages. Answers this rank
	// queues for a peer that does not read them (replies to its gets and
	// RPC requests) are bounded apart, by MaxQueuedBytes/8 (at least 1
	// MiB), past which this rank stops reading that peer. Every rank must
	// use a value of at least 64 KiB. Default 64 MiB.
	MaxQueuedBytes int64
	// EagerMax is the longest SEND sent eagerly: at once, to be held by
	// the receiver if no receive is posted yet. Longer ones, and striped
	// ones, go by rendezvous: the sender announces the message, and its
	// bytes move once the receiver has posted a receive for it, straight
	// into that receive's buffer. The limit actually used towards a peer is
	// also at most a quarter of that peer's MaxQueuedBytes. Default 1 MiB.
	EagerMax int
	// DialTimeout bounds how long construction waits for the whole mesh:
	// dials retry with backoff until it passes. Default 30 s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds one connection's HELLO exchange; a silent
	// connection is dropped after it. Default 5 s.
	HandshakeTimeout time.Duration
	// LateJoinWindow is how long a rank that accepts connections keeps its
	// listener open after its mesh formed, answering late dialers: each
	// shakes hands as during formation and, if it proves the key, is
	// refused with ErrSlotTaken, so that a rank whose place another
	// process took learns so instead of finding the port closed. Negative
	// closes the listener as soon as the mesh has formed. Close ends the
	// window early. Default: DialTimeout.
	LateJoinWindow time.Duration
	// Spin is how long a blocking receive keeps reading the socket itself
	// while no byte arrives, before it sleeps until the event loop wakes
	// it. Spinning takes the wake-up out of a message's latency at the cost
	// of up to Spin of CPU per idle receive. Negative disables it. Default
	// 200 µs. When more ranks run on this machine than it has cores, the
	// default spin gives the core up between polls (sched_yield), so that
	// the ranks waited for get to run (on Linux; elsewhere such a machine
	// does not spin by default); an explicit Spin spins without yielding.
	// The cores are those the process may use: its affinity mask, lowered
	// to a cgroup CPU quota (a container's --cpus). The ranks on this
	// machine are those reached over loopback and, once
	// the mesh has formed, those whose HELLO names this machine's kernel
	// (frame/spec.md, "Machines"): ranks in other network namespaces or
	// containers of one kernel count too.
	// The budget adapts to each peer: while most recent waits on a peer
	// (receives, collective steps, barrier rounds) outlasted Spin, so that
	// spinning would not have spared them a wake-up, waits on it spin
	// only 10 µs, and they spin Spin again after a few that came sooner.
	// The default is 200 µs rather than less because with shorter spins
	// some runs of a large allreduce between emulated hosts were much
	// slower, every one of its pieces waiting for a wake-up (bench/RESULTS.md,
	// "Figures moved out of code comments", Options.Spin).
	Spin time.Duration
	// SpinYield, if positive, is how long a spin finds nothing before it
	// starts giving its core up (sched_yield) every 10 µs, on a machine
	// with a core per rank (on a crowded one a spin gives it up between
	// polls anyway). A spinning rank holds its core; where the thread it
	// waits for was placed on that core (the scheduler wakes a thread next
	// to the one that woke it, and the ranks' event loops and the
	// runtime's threads share the cores too), that thread runs only once
	// the spin ends, and a message waits for the whole spin. Giving the
	// core up costs a system call each time, and the core itself where
	// another thread wants it. Default 0: never. Measured in
	// bench/RESULTS.md, "two ranks on one core". Linux only; elsewhere it
	// does nothing.
	SpinYield time.Duration
	// Streams is the number of TCP data connections between each pair of
	// ranks of a full mesh (1 to MaxStreams); each pair also has one control
	// connection, so a rank holds Streams+1 TCP sockets per peer, neighbours
	// included (count them when sizing file descriptor limits). A star
	// always uses one connection per worker. A SEND of at least StripeMin
	// bytes is split into one piece per data stream, sent at once and
	// reassembled in order at the receiver, straight into the receive's
	// buffer; smaller messages, and the announcements of rendezvous
	// messages, take the first data stream, so their latency does not
	// change, and frames other than messages take the control connection
	// (frame/spec.md, "Streams and striping"). Every rank must use the
	// same value.
	// Default 1 (package thunderbolt picks its own).
	Streams int
	// StripeMin is the size in bytes from which a SEND is striped across
	// Streams. Default 1 MiB.
	StripeMin int
	// SocketBuffer sets SO_SNDBUF and SO_RCVBUF on every connection; 0 keeps
	// the kernel's auto-tuning. Default 0.
	SocketBuffer int
	// Congestion names the TCP congestion control of every connection
	// (TCP_CONGESTION on Linux and FreeBSD), e.g. "cubic", "reno", "bbr".
	// CongestionSystem keeps the system's default everywhere. Default:
	// LoopbackCongestion ("cubic") on loopback connections, as measured
	// (see there), and the system's default on every other connection and
	// wherever the kernel refuses it or cannot choose per socket (macOS).
	// A name set here must take effect: if the kernel refuses it, the
	// transport fails to form with ErrCongestion.
	Congestion string
	// KeepAlive bounds how long a peer that went silent goes unnoticed:
	// its host vanished or the network between failed, so no FIN, RST or
	// ICMP error ever arrives, or its process stopped (SIGSTOP, a debugger,
	// a hung machine) with its sockets open. (A peer process that dies or
	// closes is noticed at once: its kernel ends the connection.) Every
	// connection of a pair is watched on its own, each data stream as well
	// as the control stream (frame/spec.md, "Liveness"), so that one that
	// goes silent while the others live (a NAT that expired one idle flow,
	// a sealed record left out on the path) does not leave a receive
	// waiting on it forever. Each connection that sent nothing for a
	// KeepAlive sends a HEARTBEAT frame, and one from which not a byte
	// arrived for 4 KeepAlive periods while this rank was reading it is
	// dropped, and with it the peer: every operation needing that peer
	// fails with ErrPeerLost (cause ErrNoHeartbeat, a *SilenceError that
	// names the connection), between 4 and 4.25 periods after the last
	// byte heard on it, whether it was idle or had data in flight. An idle
	// connection carries a byte at least every 1.25 periods, so one that
	// goes silent is dropped 2.75 to 4.25 periods after (measured:
	// bench/RESULTS.md, Liveness). A live peer that is merely slow keeps
	// sending heartbeats or data, and any byte counts, so neither a slow
	// link nor backpressure loses it. Silence is not counted while this
	// rank itself does not read the connection: a large message nobody
	// waits for stays in the data stream until its receive is posted (a
	// receive from the peer reads on, and the count starts again), a
	// data stream's reading stopped (the control stream then watches the
	// peer), the peer does not read this rank's answers while those still
	// move, or a star's coordinator holds the peer back until what it sent
	// is forwarded. In a star, the coordinator and each worker watch each
	// other, and a worker learns of another's loss from the coordinator.
	// Every rank should use the same value. Default 1 s.
	KeepAlive time.Duration
	// MeshKey, when set, makes every connection prove knowledge of it with
	// HMAC-SHA256 in both directions, the dialer first (frame/spec.md,
	// "Handshake"). Without a key anyone who reaches a rank can join as a
	// rank: a transport without one that listens on or dials anything but
	// loopback logs a warning, once. Use a random key (boltmesh keygen):
	// whoever answers at an address a rank dials sees its proof, from
	// which a short or guessable key can be recovered offline. Default: the
	// BOLTMESH_KEY environment variable, or no key.
	MeshKey []byte
	// MeshID names the mesh; ranks of different meshes refuse each other.
	// Default "boltmesh".
	MeshID string
	// HeapSize is the size of the symmetric heap. Default 64 MiB.
	HeapSize uint64
	// SharedMemory says how ranks of a full mesh on one host (neighbours:
	// their HostIDs are equal) are joined. SharedMemoryAuto: each pair
	// moves its frames through pipes in shared memory (frame/spec.md,
	// "Neighbours"), and Put and Get to a neighbour copy straight into or
	// out of its heap, mapped here; a pair that cannot meet that way (fd
	// passing refused, another user) stays on TCP and the first such pair
	// is logged. SharedMemoryOff: TCP for every pair. A star always uses
	// TCP. Default SharedMemoryAuto.
	SharedMemory SharedMemoryMode
	// HostID overrides the identity of this rank's host, which by default
	// is the kernel's boot identity and (on Linux) the network namespace:
	// ranks with equal HostIDs are neighbours. Giving ranks of one machine
	// different HostIDs makes several hosts of it (as tests do); giving
	// ranks of different machines the same one is an error they find out
	// when they fail to meet, and they stay on TCP. Default: the
	// BOLTMESH_HOST_ID environment variable, or the kernel's identity.
	HostID string
	// PipeRing is the size in bytes of the ring of each direction of a
	// neighbour pair's data pipe, a power of two of at least 64 KiB; the
	// control pipe's is a quarter of it, at least 64 KiB. A pair's pipes
	// are its higher rank's choice. Default 0: DefaultPipeRing(world),
	// 1 MiB in worlds of up to 17 ranks, smaller in larger ones.
	PipeRing int
	// SingleCopyMin, if positive, is the shortest message sent to a
	// neighbour by single copy (frame/spec.md, "Single copy"): the
	// receiver copies it straight from the sender's buffer into its
	// receive's (Linux's process_vm_readv), where through the rings every
	// byte is copied twice. Both ranks of a pair must set it. Pairs whose
	// meeting found the kernel refusing it (Yama's ptrace_scope, a
	// container), and systems without it, keep the rings;
	// Topology().SingleCopy() says which neighbours this rank copies from.
	// Default 0: off, the rings for every size, as measured so far
	// (bench/RESULTS.md, "Single copy between neighbours", and "Figures
	// moved out of code comments", Options.SingleCopyMin). 256 KiB is the
	// size to try on a machine where it is fast.
	SingleCopyMin int
	// Seal says which TCP links are sealed: every frame after the
	// handshake, header included, authenticated and encrypted with an
	// AEAD under keys derived from the mesh key and that handshake
	// (frame/spec.md, "Sealed links"), so that nobody on the path reads
	// or alters it; a link whose records were altered, replayed, dropped
	// or reordered is lost, and operations on that peer fail with
	// ErrTampered inside ErrPeerLost. SealAuto: a mesh with a key seals
	// every link that leaves the host (either end sees the other's
	// address as not loopback, and they run on different machines); a
	// loopback link stays unsealed, even between ranks whose HostIDs
	// differ (several hosts emulated on one machine): SealAlways seals
	// it. SealAlways: every TCP link, loopback too, but those between
	// neighbours, whose frames go through shared memory (needs a key).
	// SealNever: none; a
	// peer that must seal is refused. Ranks of one mesh should agree;
	// Topology().Sealed() lists the sealed peers. Default SealAuto.
	Seal SealMode
	// Logger receives warnings: a peer lost, once per peer with its rank
	// and the cause (a crash, silence, tampering, a breach of the
	// protocol; not a peer that closed in order); refused connections
	// (the first 5 at once, then at most one every 10 s, each saying how
	// many were not logged since the one before, so that a flood of
	// strangers does not flood the log); what a peer can cause over and
	// over (frames a star's coordinator cannot forward: a line, then at
	// most one every 10 s per peer with the count since, "more"); the
	// first error of an accept loop, a missing mesh key.
	// Default slog.Default().
	Logger *slog.Logger
	// OnReject, if set, is called for every connection refused during
	// setup or LateJoinWindow (so possibly after construction returned),
	// with a *HandshakeError; it is not rate-limited. It runs on the
	// connection's handshake goroutine: a slow OnReject delays no other
	// connection, but Close waits for it.
	OnReject func(error)

	// relayPart, set by tests only, is the part size a star's coordinator
	// relays long payloads in (0: relayPart), so that the fuzz targets'
	// short frames go through the relay too.
	relayPart int
}

// SharedMemoryMode is Options.SharedMemory.
type SharedMemoryMode int

// Options.SharedMemory's values.
const (
	SharedMemoryAuto SharedMemoryMode = 0 // neighbours over shared memory, where they can meet
	SharedMemoryOff  SharedMemoryMode = 1 // every pair over TCP
)

// SealMode is Options.Seal.
type SealMode int

// Options.Seal's values.
const (
	SealAuto   SealMode = 0 // links that leave the host, in a mesh with a key
	SealAlways SealMode = 1 // every TCP link but a neighbour's
	SealNever  SealMode = 2 // no link
)

// minQueuedBytes is the least Options.MaxQueuedBytes.
const minQueuedBytes = 64 << 10

// maxPosted is the bound on answers queued for a peer that does not read
// them (ioloop.Options.MaxPosted), for a MaxQueuedBytes of q.
func maxPosted(q int64) int64 { return max(q/8, 1<<20) }

// MaxStreams bounds Options.Streams.
const MaxStreams = 16

// withDefaults returns o with every field left zero set to its default,
// or an *OptionError naming the first field that is invalid: each
// component's fields in turn, then the Logger.
func (o Options) withDefaults() (Options, error) {
	for _, fill := range [...]func(*Options) error{
		(*Options).flowDefaults,
		(*Options).timeDefaults,
		(*Options).streamDefaults,
		(*Options).keyDefaults,
		(*Options).hostDefaults,
	} {
		if err := fill(&o); err != nil {
			return o, err
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// flowDefaults fills in and checks what bounds a peer's frames: MaxFrame,
// MaxQueuedBytes (the window), EagerMax.
func (o *Options) flowDefaults() error {
	if o.MaxFrame == 0 {
		o.MaxFrame = 1 << 30
	}
	if o.MaxFrame > 1<<62 {
		return &OptionError{"MaxFrame", "above 2^62"}
	}
	if o.MaxQueuedBytes == 0 {
		o.MaxQueuedBytes = 64 << 20
	}
	if o.MaxQueuedBytes < 0 {
		return &OptionError{"MaxQueuedBytes", "is negative"}
	}
	if o.MaxQueuedBytes < minQueuedBytes {
		return &OptionError{"MaxQueuedBytes", fmt.Sprintf("%d is below %d", o.MaxQueuedBytes, minQueuedBytes)}
	}
	if o.EagerMax == 0 {
		o.EagerMax = 1 << 20
	}
	if o.EagerMax < 0 {
		return &OptionError{"EagerMax", "is negative"}
	}
	return nil
}

// timeDefaults fills in and checks the durations: DialTimeout,
// HandshakeTimeout, Spin, KeepAlive, LateJoinWindow.
func (o *Options) timeDefaults() error {
	defDur(&o.DialTimeout, 30*time.Second)
	defDur(&o.HandshakeTimeout, 5*time.Second)
	defDur(&o.Spin, 200*time.Microsecond)
	defDur(&o.KeepAlive, time.Second)
	defDur(&o.LateJoinWindow, o.DialTimeout)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"DialTimeout", o.DialTimeout}, {"HandshakeTimeout", o.HandshakeTimeout}, {"KeepAlive", o.KeepAlive}} {
		if d.v < 0 {
			return &OptionError{d.name, "is negative"}
		}
	}
	return nil
}

// streamDefaults fills in and checks a pair's TCP streams: SocketBuffer,
// Streams, StripeMin.
func (o *Options) streamDefaults() error {
	if o.SocketBuffer < 0 {
		return &OptionError{"SocketBuffer", "is negative"}
	}
	if o.Streams == 0 {
		o.Streams = 1
	}
	if o.Streams < 1 || o.Streams > MaxStreams {
		return &OptionError{"Streams", fmt.Sprintf("%d is outside [1, %d]", o.Streams, MaxStreams)}
	}
	if o.StripeMin == 0 {
		o.StripeMin = 1 << 20
	}
	if o.StripeMin < o.Streams {
		return &OptionError{"StripeMin", fmt.Sprintf("%d is below Streams (%d)", o.StripeMin, o.Streams)}
	}
	return nil
}

// keyDefaults fills in and checks the mesh's identity and key, and the
// sealing that the key allows: MeshKey, MeshID, Seal.
func (o *Options) keyDefaults() error {
	if o.MeshKey == nil {
		if k := os.Getenv("BOLTMESH_KEY"); k != "" {
			o.MeshKey = []byte(k)
		}
	}
	if o.MeshID == "" {
		o.MeshID = "boltmesh"
	}
	if o.Seal < SealAuto || o.Seal > SealNever {
		return &OptionError{"Seal", fmt.Sprintf("%d is not SealAuto, SealAlways or SealNever", o.Seal)}
	}
	if o.Seal == SealAlways && len(o.MeshKey) == 0 {
		return &OptionError{"Seal", "SealAlways needs a mesh key (MeshKey, BOLTMESH_KEY): the keys are derived from it"}
	}
	return nil
}

// hostDefaults fills in and checks the heap and what ranks of one host
// share: HeapSize, SharedMemory, HostID, PipeRing.
func (o *Options) hostDefaults() error {
	if o.HeapSize == 0 {
		o.HeapSize = 64 << 20
	}
	if o.SharedMemory != SharedMemoryAuto && o.SharedMemory != SharedMemoryOff {
		return &OptionError{"SharedMemory", fmt.Sprintf("%d is neither SharedMemoryAuto nor SharedMemoryOff", o.SharedMemory)}
	}
	if o.HostID == "" {
		o.HostID = os.Getenv("BOLTMESH_HOST_ID")
	}
	if o.PipeRing != 0 && o.PipeRing < 64<<10 || o.PipeRing > 1<<30 || o.PipeRing&(o.PipeRing-1) != 0 {
		return &OptionError{"PipeRing", fmt.Sprintf("%d is not a power of two in [64 KiB, 1 GiB]", o.PipeRing)}
	}
	return nil
}

func defDur(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func (o *Options) meshID() (id [frame.MeshIDSize]byte) {
	sum := sha256.Sum256([]byte("boltmesh mesh id\x00" + o.MeshID))
	copy(id[:], sum[:])
	return id
}

// Validate checks opts as the constructors (FromListener, Bind,
// CoordinatorListen, WorkerDial) do, without building anything: the
// fields' ranges (an *OptionError naming the field) and whether this
// system can set Options.Congestion (ErrCongestion). A tool can thus
// refuse a bad option before it starts any process.
func (o Options) Validate() error {
	v, err := o.withDefaults()
	if err != nil {
		return err
	}
	return checkCongestion(v.Congestion)
}

// PipeRingBudget is the shared memory, in bytes of data rings, that
// DefaultPipeRing lets one rank's pipes to its possible neighbours take
// in one direction: 16 MiB (about 40 MiB with both directions and the
// control rings).
const PipeRingBudget = 16 << 20

// DefaultPipeRing is a pair's data ring (Options.PipeRing left 0) in a
// world of world ranks: PipeRingBudget over the world's other ranks,
// any of which may be a neighbour, rounded down to a power of two and
// kept within [64 KiB, 1 MiB]: 1 MiB up to 17 ranks, 512 KiB up to 33,
// 256 KiB up to 65, 128 KiB up to 129, then 64 KiB. Every pair of a host
// has two rings, so their memory grows with the square of the host's
// ranks: 32 ranks on one host take 1.2 GiB with 1 MiB rings, 620 MiB
// with 512 KiB. Smaller rings cost a pair bandwidth (bench/RESULTS.md),
// so worlds of up to 17 keep 1 MiB.
func DefaultPipeRing(world int) int {
	ring := 1 << 20
	for ring > 64<<10 && ring*(world-1) > PipeRingBudget {
		ring /= 2
	}
	return ring
}

// Congestion control choices for Options.Congestion.
const (
	// LoopbackCongestion is the TCP congestion control boltmesh asks for
	// on loopback connections when Options.Congestion is empty; other
	// connections keep the system's. On loopback BBR's pacing spreads
	// every burst over timer ticks, which made allreduces slower than under
	// cubic, while between network namespaces over veth BBR was the faster,
	// so real links keep the system's choice (bench/RESULTS.md,
	// "Figures moved out of code comments", LoopbackCongestion).
	LoopbackCongestion = "cubic"
	// CongestionSystem keeps the kernel's default congestion control
	// (sysctl net.ipv4.tcp_congestion_control on Linux) on every
	// connection, loopback included.
	CongestionSystem = "system"
)

// checkCongestion fails with ErrCongestion, before any connection is
// made, if no socket can take the congestion control that
// Options.Congestion names.
func checkCongestion(name string) error {
	if name == "" || name == CongestionSystem {
		return nil
	}
	if err := tcp.Probe(name); err != nil {
		return fmt.Errorf("%w: Options.Congestion %q: %w", ErrCongestion, name, err)
	}
	return nil
}

// setCongestion applies Options.Congestion to a connection. The default is
// a preference, for loopback connections only: if the kernel refuses it,
// the connection keeps the system's. A name the caller chose must take
// effect.
func (o *Options) setCongestion(tc *net.TCPConn) error {
	name := o.Congestion
	switch name {
	case CongestionSystem:
		return nil
	case "":
		if isLoopback(tc.RemoteAddr().String()) {
			tcp.SetCongestion(tc, LoopbackCongestion)
		}
		return nil
	}
	if err := tcp.SetCongestion(tc, name); err != nil {
		return fmt.Errorf("%w: %q on the connection with %s: %w", ErrCongestion, name, tc.RemoteAddr(), err)
	}
	return nil
}
