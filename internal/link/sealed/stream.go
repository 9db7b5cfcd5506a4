package sealed

import (
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// writeBudget is the most plaintext one Writev seals: what a socket's
// buffer takes at once, in four records.
const writeBudget = 4 * MaxRecord

// readBuffer is the size of the buffer records are read into: room for a
// whole record after a part of the one before, and for several small
// ones per read.
const readBuffer = 4 * (MaxRecord + Overhead)

// Stream is a sealed link over another ioloop.Stream (a socket's): see
// the package doc for the record format and the lock rule.
type Stream struct {
	in   ioloop.Stream
	lim  Limits
	crew int // Options.Crew

	// The write side, the Conn's writer's.
	w    direction
	wb   batch     // the records of one Writev, to seal
	out  []byte    // sealed records; out[sent:] not yet written
	sent int       // bytes of out written
	wv   [1][]byte // in.Writev's vector

	// The read side, the Conn's reader's.
	r          direction
	rbatch     batch  // the records of one Read, to open
	rb         []byte // records read; rb[rOff:rEnd] not yet opened
	rOff, rEnd int
	pOff, pEnd int   // rb[pOff:pEnd]: an opened record's plaintext not yet read
	rerr       error // the record that did not open: every later Read's
}

var (
	_ ioloop.Stream    = (*Stream)(nil)
	_ ioloop.Attacher  = (*Stream)(nil)
	_ ioloop.Buffering = (*Stream)(nil)
)

// New returns in sealed with k, as o says. The Stream owns in from now
// on, also when New fails. The other end must have been made with the
// other end's Keys of the same Derive.
func New(in ioloop.Stream, k Keys, o Options) (*Stream, error) {
	s := &Stream{in: in, crew: max(o.Crew, 1)}
	var err error
	if s.lim, err = o.Limits.check(); err == nil {
		err = s.w.init(k.Cipher, k.Send)
	}
	if err == nil {
		err = s.r.init(k.Cipher, k.Recv)
	}
	if err != nil {
		in.Close()
		return nil, err
	}
	if s.crew > 1 {
		hireCrew(s.crew)
	}
	s.out = make([]byte, 0, writeBudget+(writeBudget/MaxRecord+2)*Overhead)
	s.rb = make([]byte, readBuffer)
	return s, nil
}

// Attach implements ioloop.Attacher, for a wrapped stream that is one.
func (s *Stream) Attach(c *ioloop.Conn) {
	if a, ok := s.in.(ioloop.Attacher); ok {
		a.Attach(c)
	}
}

// Fd implements ioloop.Stream: the wrapped stream's.
func (s *Stream) Fd() int { return s.in.Fd() }

// Shutdown implements ioloop.Stream. Records not yet written are lost.
func (s *Stream) Shutdown() { s.in.Shutdown() }

// Close implements ioloop.Stream.
func (s *Stream) Close() error { return s.in.Close() }

// Writev implements ioloop.Stream: it seals up to writeBudget bytes of
// bufs, in records of at most MaxRecord, and reports them written once
// sealed; the records the wrapped stream has no room for wait (Buffered),
// and while any do, Writev takes nothing new.
func (s *Stream) Writev(bufs [][]byte) (int, error) {
	if s.Buffered() {
		if err := s.flushOut(); err != nil {
			return 0, err
		}
	}
	s.out, s.sent = s.out[:0], 0
	n, err := s.seal(bufs)
	if err == nil {
		err = s.flushOut()
	}
	if err != nil && err != unix.EAGAIN {
		return 0, err
	}
	return n, nil
}

// Buffered implements ioloop.Buffering.
func (s *Stream) Buffered() bool { return s.sent < len(s.out) }

// Flush implements ioloop.Buffering.
func (s *Stream) Flush() error {
	if err := s.flushOut(); err != unix.EAGAIN {
		return err
	}
	return nil
}

// flushOut writes out[sent:]: nil once all of it is written, or the
// wrapped stream's error (unix.EAGAIN when it has no room).
func (s *Stream) flushOut() error {
	for s.sent < len(s.out) {
		s.wv[0] = s.out[s.sent:]
		n, err := s.in.Writev(s.wv[:])
		s.wv[0] = nil
		s.sent += max(n, 0)
		if err != nil && err != unix.EINTR {
			return err
		}
	}
	return nil
}

// seal seals bytes of bufs into records appended to out, as many as fit
// in its capacity, and returns how many. A record whose bytes lie in one
// buffer is sealed straight from it; the bytes of one that spans several
// (small frames, a header and the start of its payload) are gathered
// into out first and sealed in place. The records are planned in order
// and then sealed as a batch, on the crew where it is large.
func (s *Stream) seal(bufs [][]byte) (int, error) {
	total, i, off := 0, 0, 0
	var err error
	for {
		for i < len(bufs) && off == len(bufs[i]) {
			i, off = i+1, 0
		}
		room := cap(s.out) - len(s.out) - 2*Overhead // and a key update's
		if i == len(bufs) || room <= 0 || !s.wb.room(2) {
			break
		}
		if err = s.updateIfDue(); err != nil {
			break
		}
		n := min(room, MaxRecord)
		if avail := len(bufs[i]) - off; avail >= n || i == len(bufs)-1 {
			n = min(n, avail)
			s.planRecord(recordData, bufs[i][off:off+n])
			off += n
		} else {
			n = s.gather(bufs, &i, &off, n)
			start := len(s.out)
			s.planRecord(recordData, s.out[start+HeaderSize:start+HeaderSize+n])
		}
		total += n
	}
	s.wb.run(s.crew)
	return total, err
}

// gather copies up to n bytes of bufs from bufs[*i][*off:] on into the
// body of the record that would start at len(out), and returns how many.
func (s *Stream) gather(bufs [][]byte, i, off *int, n int) int {
	body := s.out[len(s.out)+HeaderSize : len(s.out)+HeaderSize+n]
	k := 0
	for k < n && *i < len(bufs) {
		c := copy(body[k:], bufs[*i][*off:])
		k, *off = k+c, *off+c
		if *off == len(bufs[*i]) {
			*i, *off = *i+1, 0
		}
	}
	return k
}

// updateIfDue plans a key-update record and takes the next key once the
// current one reached its limits.
func (s *Stream) updateIfDue() error {
	if s.w.records < s.lim.Records && s.w.bytes < s.lim.Bytes {
		return nil
	}
	s.planRecord(recordUpdate, nil)
	return s.w.update()
}

// planRecord appends a record of type typ sealing plain (bytes elsewhere,
// or exactly the record's body, gathered there) to out, its header
// written and its sealing planned in s.wb.
func (s *Stream) planRecord(typ uint8, plain []byte) {
	start := len(s.out)
	end := start + HeaderSize + len(plain) + TagSize
	hdr := s.out[start : start+HeaderSize]
	putHeader(hdr, len(plain), typ)
	s.wb.plan(&s.w, len(plain), s.out[start+HeaderSize:start+HeaderSize], plain, hdr, false)
	s.out = s.out[:end]
}

// Read implements ioloop.Stream: it hands over the plaintext of the
// records read, as much as p holds (records that fit are opened straight
// into p, as a batch, on the crew where it is large), and reads the
// wrapped stream only when no whole record is left. A record that does
// not open fails the stream with a *TamperError; the plaintext of those
// before it is read first.
func (s *Stream) Read(p []byte, arm bool) (int, error) {
	n := 0
	for n < len(p) {
		if s.pOff < s.pEnd {
			c := copy(p[n:], s.rb[s.pOff:s.pEnd])
			s.pOff += c
			n += c
			continue
		}
		if s.rerr != nil {
			break
		}
		k, ok, err := s.open(p[n:])
		n += k
		switch {
		case err != nil:
			s.rerr = err
		case ok:
		case n > 0:
			return n, nil
		default:
			if err := s.fill(arm); err != nil {
				return 0, err
			}
		}
	}
	if n > 0 {
		return n, nil
	}
	return 0, s.rerr
}

// open opens whole records at the front of rb[rOff:rEnd]: the data
// records whose plaintexts fit in dst one after another, straight into
// it, as one batch (k bytes); or, when the first of them does not fit or
// is a key update, that one alone. ok reports that a record opened; err,
// the first that did not (k counts those before it).
func (s *Stream) open(dst []byte) (k int, ok bool, err error) {
	off := s.rOff
	for s.rbatch.room(1) {
		rec := s.rb[off:s.rEnd]
		n, typ, whole, bad := s.peek(rec)
		if bad != nil && s.rbatch.n == 0 {
			return 0, false, bad
		}
		if bad != nil || !whole {
			break // the batch first; the next call reports bad
		}
		if typ == recordUpdate || n > len(dst)-k {
			if s.rbatch.n > 0 {
				break
			}
			return 0, true, s.openAlone(rec[:HeaderSize+n+TagSize], n, typ)
		}
		hdr, body := rec[:HeaderSize], rec[HeaderSize:HeaderSize+n+TagSize]
		s.rbatch.plan(&s.r, n, dst[k:k], body, hdr, true)
		k += n
		off += HeaderSize + n + TagSize
	}
	if s.rbatch.n == 0 {
		return 0, false, nil
	}
	jobs := s.rbatch.jobs[:s.rbatch.n]
	s.rbatch.run(s.crew)
	k = 0 // counted again: only the records before a failed one count
	for i := range jobs {
		j := &jobs[i]
		if j.failed {
			return k, k > 0, s.tamperedAt(j.rec, "it does not authenticate")
		}
		k += len(j.src) - TagSize
		s.rOff += HeaderSize + len(j.src)
	}
	return k, true, nil
}

// peek reads the header of the record at the front of rec: its
// plaintext's length and type, and whether it is whole; or why it is
// refused.
func (s *Stream) peek(rec []byte) (n int, typ uint8, whole bool, err error) {
	if len(rec) < HeaderSize {
		return 0, 0, false, nil
	}
	n, typ, good := parseHeader(rec)
	if !good {
		return 0, 0, false, s.tampered("a header this version does not write")
	}
	if s.r.records >= HardRecords || s.r.bytes+uint64(n) > HardBytes {
		return 0, 0, false, s.tampered("past the key's hard limit without a key update")
	}
	return n, typ, len(rec) >= HeaderSize+n+TagSize, nil
}

// openAlone opens rec, a whole record of n bytes of plaintext of type typ
// at rOff, in place: a key update takes the next key; a data record's
// plaintext is left where rb[pOff:pEnd] says.
func (s *Stream) openAlone(rec []byte, n int, typ uint8) error {
	hdr, body := rec[:HeaderSize], rec[HeaderSize:]
	at := s.r.records
	if _, err := s.r.aead.Open(body[:0], s.r.next(n), body, hdr); err != nil {
		return s.tamperedAt(at, "it does not authenticate")
	}
	s.rOff += len(rec)
	if typ == recordUpdate {
		return s.r.update()
	}
	s.pOff, s.pEnd = s.rOff-n-TagSize, s.rOff-TagSize
	return nil
}

func (s *Stream) tampered(why string) error { return s.tamperedAt(s.r.records, why) }

func (s *Stream) tamperedAt(rec uint64, why string) error {
	return &TamperError{Record: rec, Key: s.r.gen, Why: why}
}

// fill reads the wrapped stream after rEnd, first moving a partial record
// to the front where what is left of rb might not hold it. It returns nil
// once bytes came, ioloop.ErrEOF at the end of the stream after a whole
// record, a *TamperError at an end inside one, or the wrapped stream's
// error (unix.EAGAIN when it has nothing).
func (s *Stream) fill(arm bool) error {
	if s.rOff == s.rEnd {
		s.rOff, s.rEnd = 0, 0
	} else if len(s.rb)-s.rOff < MaxRecord+Overhead {
		s.rEnd = copy(s.rb, s.rb[s.rOff:s.rEnd])
		s.rOff = 0
	}
	n, err := s.in.Read(s.rb[s.rEnd:], arm)
	switch {
	case n > 0:
		s.rEnd += n
		return nil
	case err == nil || err == ioloop.ErrEOF:
		if s.rEnd > s.rOff {
			s.rerr = &TamperError{Record: s.r.records, Key: s.r.gen, Why: "the stream ends inside it", Cut: true}
			return s.rerr
		}
		return ioloop.ErrEOF
	}
	return err
}
