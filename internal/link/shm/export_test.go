package shm

// RawPipe is one side of a pipe driven by hand, without a Conn: a test
// plays the other process with it.
type RawPipe struct{ p *Pipe }

// NewRawPipe opens side of the pipe in mem, with bell as its bell.
func NewRawPipe(mem []byte, side, bell int) (*RawPipe, error) {
	p, err := newPipe(mem, side, bell)
	return &RawPipe{p}, err
}

// Write copies what fits of b into the ring and publishes it.
func (r *RawPipe) Write(b []byte) (int, error) { return r.p.Writev([][]byte{b}) }

// Read copies out what the ring holds, without asking for a bell.
func (r *RawPipe) Read(b []byte) (int, error) { return r.p.read(b, false) }

// SetTestHookBell installs f as the hook that sees every bell a pipe
// rings (nil removes it). Set it only while no Loop is running.
func SetTestHookBell(f func()) { testHookBell = f }

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

// SetTestHookAsk installs f as the hook that sees every time a pipe that
// nobody polls asks for a bell (armEmpty; nil removes it). Set it only
// while no Loop is running.
func SetTestHookAsk(f func()) { testHookAsk = f }

// Settle asks for a bell if nobody polls p and it has not asked, as the
// late arm does once it is due.
func Settle(p *Pipe) { p.settle() }

// Asked reports whether p has asked for a bell that has not rung.
func Asked(p *Pipe) bool { return p.asked() }

// Boxed returns how many messages the raw pipe wrote through its box, and
// Ringed how many bytes through its ring.
func (r *RawPipe) Boxed() uint64 { return r.p.tx.boxes }

// Ringed returns the bytes the raw pipe wrote through its ring.
func (r *RawPipe) Ringed() uint64 { return r.p.tx.pos }

// BoxedRead returns how many box messages the raw pipe has read whole.
func (r *RawPipe) BoxedRead() uint64 { return r.p.rx.boxes }
