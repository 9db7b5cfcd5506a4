package stdnet

import "fmt"

// exchangeInline is the largest message Exchange sends before receiving,
// in the calling goroutine: the socket buffers take it without the peer
// reading. Larger ones are sent from a goroutine.
const exchangeInline = 32 << 10

// Send sends p to rank to; p may be reused on return.
func (m *Mesh) Send(to int, p []byte) error {
	c, err := m.peer(m.msg, to)
	if err == nil {
		err = c.write(header{kind: kindMsg, n: uint64(len(p))}, p)
	}
	if err != nil {
		return fmt.Errorf("stdnet: send to rank %d: %w", to, err)
	}
	return nil
}

// RecvInto receives the next message from rank from into dst and returns
// its length.
func (m *Mesh) RecvInto(from int, dst []byte) (int, error) {
	c, err := m.peer(m.msg, from)
	var h header
	if err == nil {
		h, err = c.expect(kindMsg)
	}
	if err == nil {
		err = c.readPayload(dst, h.n)
	}
	if err != nil {
		return 0, fmt.Errorf("stdnet: receive from rank %d: %w", from, err)
	}
	return int(h.n), nil
}

// Exchange sends out to rank to and receives the next message from rank
// from into in, concurrently for large messages.
func (m *Mesh) Exchange(to, from int, out, in []byte) (int, error) {
	if len(out) <= exchangeInline {
		if err := m.Send(to, out); err != nil {
			return 0, err
		}
		return m.RecvInto(from, in)
	}
	errc := make(chan error, 1)
	go func() { errc <- m.Send(to, out) }()
	n, err := m.RecvInto(from, in)
	if serr := <-errc; err == nil {
		err = serr
	}
	return n, err
}

// peer returns rank r's connection in table cs.
func (m *Mesh) peer(cs []*conn, r int) (*conn, error) {
	if r < 0 || r >= m.world || r == m.rank {
		return nil, fmt.Errorf("stdnet: no connection from rank %d to rank %d", m.rank, r)
	}
	if cs[r] == nil {
		return nil, ErrClosed
	}
	return cs[r], nil
}
