package ioloop

// SetTestHookWritev installs f as the hook that sees every writev (nil
// removes it). Set it only while no Loop is running.
func SetTestHookWritev(f func(id, bufs, n int)) { testHookWritev = f }

// SetTestHookRead installs f as the hook that runs before every read of a
// socket, with the connection's read side locked (nil removes it). Set it
// only while no Loop is running.
func SetTestHookRead(f func(id int)) { testHookRead = f }

// QueuedFrames returns how many frames of c are queued and not yet
// completely written.
func QueuedFrames(c *Conn) int {
	c.wr.qmu.Lock()
	defer c.wr.qmu.Unlock()
	return len(c.wr.queue) - c.wr.head
}

// Writable runs what the loop runs when it sees c's socket writable.
func Writable(c *Conn) { c.onWritable() }

// RawPipe is one side of a pipe driven by hand, without a Conn: a test
// plays the other process with it.
type RawPipe struct{ p *pipe }

// NewRawPipe opens side of the pipe in mem, with bell as its bell.
func NewRawPipe(mem []byte, side, bell int) (*RawPipe, error) {
	p, err := newPipe(mem, side, bell)
	return &RawPipe{p}, err
}

// Write copies what fits of b into the ring and publishes it.
func (r *RawPipe) Write(b []byte) (int, error) { return r.p.writev([][]byte{b}) }

// Read copies out what the ring holds, without asking for a bell.
func (r *RawPipe) Read(b []byte) (int, error) { return r.p.read(b, false) }

// SetTestHookBell installs f as the hook that sees every bell a pipe
// rings (nil removes it). Set it only while no Loop is running.
func SetTestHookBell(f func()) { testHookBell = f }

// SetTestHookLocked installs f as the hook that runs as a drain takes a
// connection's read side, before it looks at pending (nil removes it).
// Set it only while no Loop is running.
func SetTestHookLocked(f func(id int)) { testHookLocked = f }

// ReadPending reports whether readiness was reported while the read side
// was held elsewhere, and is still to be served.
func ReadPending(c *Conn) bool { return c.rd.pending.Load() }

// PipeRingAt returns the offset in a pipe's memory (rings of ring bytes)
// of ring r's first control word, its tail; the other words, the box and
// the data follow at the Pipe*Off offsets from it.
func PipeRingAt(ring, r int) int { return pipeHeader + r*(pipeCtl+pipeBox+ring) }

// Offsets from PipeRingAt, and the box's shape.
const (
	PipeHeadOff     = pipeLine
	PipeWantRoomOff = 3 * pipeLine
	PipeBoxReadOff  = 4 * pipeLine
	PipeBoxOff      = pipeCtl
	PipeDataOff     = pipeCtl + pipeBox
	BoxSlots        = boxSlots
	BoxSlot         = boxSlot
	BoxCap          = boxCap
)

// BoxedWrites returns how many messages c's pipe has written through its
// box.
func BoxedWrites(c *Conn) uint64 {
	c.wr.mu.Lock()
	defer c.wr.mu.Unlock()
	return c.pipe.tx.boxes
}

// SetTestHookAsk installs f as the hook that sees every time a pipe that
// nobody polls asks for a bell (armEmpty; nil removes it). Set it only
// while no Loop is running.
func SetTestHookAsk(f func()) { testHookAsk = f }

// Settle asks for a bell if nobody polls c's pipe and it has not asked,
// as the late arm does once it is due.
func Settle(c *Conn) { c.settle() }

// Asked reports whether c's pipe has asked for a bell that has not rung.
func Asked(c *Conn) bool { return c.pipe.asked() }

// Boxed returns how many messages the raw pipe wrote through its box, and
// Ringed how many bytes through its ring.
func (r *RawPipe) Boxed() uint64 { return r.p.tx.boxes }

// Ringed returns the bytes the raw pipe wrote through its ring.
func (r *RawPipe) Ringed() uint64 { return r.p.tx.pos }

// BoxedRead returns how many box messages the raw pipe has read whole.
func (r *RawPipe) BoxedRead() uint64 { return r.p.rx.boxes }
