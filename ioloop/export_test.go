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

// SetTestHookLocked installs f as the hook that runs as a drain takes a
// connection's read side, before it looks at pending (nil removes it).
// Set it only while no Loop is running.
func SetTestHookLocked(f func(id int)) { testHookLocked = f }

// ReadPending reports whether readiness was reported while the read side
// was held elsewhere, and is still to be served.
func ReadPending(c *Conn) bool { return c.rd.own.Asked() }

// WriterKept returns what c's writer keeps for reuse: recycled requests,
// and the room of its queue.
func WriterKept(c *Conn) (free, room int) {
	c.wr.qmu.Lock()
	defer c.wr.qmu.Unlock()
	return len(c.wr.free), cap(c.wr.queue)
}

// KeepFree and KeepQueue are keepFree and keepQueue.
const KeepFree, KeepQueue = keepFree, keepQueue
