package c10d

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// maxPlausibleKeys bounds a GETNUMKEYS answer that Dial takes as a
// store's: anything larger is more likely text, such as the first bytes
// of a line that a peer which speaks first sent.
const maxPlausibleKeys = 1 << 32

// dialProtocol connects to addr and sets up the protocol: o.Protocol's,
// or the one the store answers in (see the package doc, "Versions").
func dialProtocol(ctx context.Context, addr string, o Options) (net.Conn, *bufio.Reader, Protocol, error) {
	try := []Protocol{ProtocolLegacy, ProtocolValidate}
	if o.Protocol != ProtocolDetect {
		try = []Protocol{o.Protocol}
	}
	var errs []error
	for _, p := range try {
		conn, err := connect(ctx, addr)
		if err != nil {
			return nil, nil, 0, err
		}
		br := bufio.NewReader(conn)
		if o.Protocol != ProtocolDetect {
			if err := open(ctx, conn, p); err != nil {
				conn.Close()
				return nil, nil, 0, err
			}
			return conn, br, p, nil
		}
		err = probe(ctx, conn, br, p, o.ProbeTimeout)
		if err == nil {
			return conn, br, p, nil
		}
		conn.Close()
		switch {
		case ctx.Err() != nil:
			return nil, nil, 0, fmt.Errorf("%w (probing as %v: %w)", ctx.Err(), p, err)
		case !errors.Is(err, errNoAnswer):
			return nil, nil, 0, fmt.Errorf("probing as %v: %w", p, err)
		}
		errs = append(errs, fmt.Errorf("as %v: %w", p, err))
	}
	return nil, nil, 0, fmt.Errorf("%w: %w", ErrNotStore, joined(errs))
}

// connect dials addr, retrying with backoff until ctx ends, as torch's
// client does: the store may not be serving yet.
func connect(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-time.After(backoff):
		}
	}
}

// open sends what protocol p sends first: VALIDATE, or nothing.
func open(ctx context.Context, conn net.Conn, p Protocol) error {
	if p != ProtocolValidate {
		return nil
	}
	conn.SetDeadline(deadline(ctx, 0))
	var r request
	r.start(p, qValidate)
	r.uint32(validateMagic)
	_, err := conn.Write(r.b)
	return err
}

// probe sends protocol p's opening and GETNUMKEYS on conn and checks the
// answer, waiting at most timeout for it.
func probe(ctx context.Context, conn net.Conn, br *bufio.Reader, p Protocol, timeout time.Duration) error {
	d := deadline(ctx, 0)
	if t := time.Now().Add(timeout); t.Before(d) {
		d = t
	}
	conn.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var r request
	if p == ProtocolValidate {
		r.start(p, qValidate)
		r.uint32(validateMagic)
	}
	r.b = append(r.b, queryCodes[p][qNumKeys])
	if _, err := conn.Write(r.b); err != nil {
		return fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	return checkProbe(br)
}

// checkProbe reads a GETNUMKEYS answer from a peer that may not be a
// store: an int64 below maxPlausibleKeys is a store's; nothing at all is
// errNoAnswer; anything else is ErrNotStore.
func checkProbe(br *bufio.Reader) error {
	var b [8]byte
	n, err := io.ReadFull(br, b[:])
	switch {
	case n == 0:
		return fmt.Errorf("%w: %w", errNoAnswer, err)
	case err != nil:
		return fmt.Errorf("%w: %d bytes of an 8-byte answer (%q), then %w", ErrNotStore, n, b[:n], err)
	}
	if v := byteOrder.Uint64(b[:]); v >= maxPlausibleKeys {
		return fmt.Errorf("%w: it answered %q", ErrNotStore, b[:])
	}
	return nil
}
