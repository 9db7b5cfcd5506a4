package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// joinRendezvous runs a rank's side: it connects to rank 0 at addr
// (retrying until timeout, as rank 0 may start later, or be busy with
// other connections and close this one before its challenge), answers
// rank 0's challenge with its own address self and returns the mesh's.
func joinRendezvous(addr string, rank, world int, self string, key []byte, timeout time.Duration) ([]string, error) {
	return joinRendezvousAt(addr, rank, world, self, key, time.Now().Add(timeout), 0)
}

// joinRendezvousAt is joinRendezvous until deadline. With sniff > 0 it
// first waits that long on each connection for rank 0's challenge, and
// fails with errSilent if none comes: what holds addr may be a TCPStore,
// which never speaks first.
func joinRendezvousAt(addr string, rank, world int, self string, key []byte, deadline time.Time, sniff time.Duration) ([]string, error) {
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
		c, err := dialRetry(addr, deadline)
		if err != nil {
			return nil, fmt.Errorf("rendezvous with rank 0 at %s: %w", addr, err)
		}
		br := bufio.NewReader(c)
		if sniff > 0 && silent(c, br, sniff) {
			c.Close()
			return nil, fmt.Errorf("rendezvous with rank 0 at %s: %w", addr, errSilent)
		}
		c.SetDeadline(deadline)
		peers, err := exchangeHelloBuf(c, br, hello{Rank: rank, World: world, Addr: fillHost(self, c.LocalAddr())}, key)
		c.Close()
		if err == nil {
			return peers, nil
		}
		if !errors.Is(err, errNoChallenge) || time.Now().Add(backoff).After(deadline) {
			return nil, fmt.Errorf("rendezvous with rank 0 at %s: %w", addr, err)
		}
		time.Sleep(backoff)
	}
}

// exchangeHello reads rank 0's challenge on c, sends h answering it, and
// reads and checks the peer list.
func exchangeHello(c net.Conn, h hello, key []byte) ([]string, error) {
	return exchangeHelloBuf(c, bufio.NewReader(c), h, key)
}

// exchangeHelloBuf is exchangeHello reading c through br.
func exchangeHelloBuf(c net.Conn, br *bufio.Reader, h hello, key []byte) ([]string, error) {
	var ch challenge
	if err := readLine(br, maxChallenge, &ch); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			err = errors.Join(errNoChallenge, err)
		}
		return nil, fmt.Errorf("waiting for the challenge: %w", err)
	}
	if !isNonce(ch.Nonce) {
		return nil, fmt.Errorf("the challenge has no nonce")
	}
	h.Server, h.Nonce = ch.Nonce, newNonce()
	h.MAC = mac(key, h.content())
	if err := writeLine(c, h); err != nil {
		return nil, err
	}
	var r reply
	if err := readLine(br, maxReplyLine(h.World), &r); err != nil {
		return nil, fmt.Errorf("waiting for the peer list: %w", err)
	}
	return checkReply(r, h, key)
}

// checkReply checks rank 0's reply to hello h.
func checkReply(r reply, h hello, key []byte) ([]string, error) {
	if r.Error != "" {
		return nil, fmt.Errorf("%w: %s", errRefused, r.Error)
	}
	if err := checkMAC(key, r.content(), r.MAC); err != nil {
		return nil, fmt.Errorf("the peer list: %w", err)
	}
	switch {
	case r.Nonce != h.Nonce || r.Server != h.Server:
		return nil, fmt.Errorf("the peer list: %w", errReplay)
	case len(r.Peers) != h.World:
		return nil, fmt.Errorf("%d peers for a world of %d", len(r.Peers), h.World)
	}
	return r.Peers, nil
}

// dialRetry dials addr with backoff until deadline.
func dialRetry(addr string, deadline time.Time) (net.Conn, error) {
	backoff := 10 * time.Millisecond
	for {
		c, err := net.DialTimeout("tcp", addr, max(time.Until(deadline), time.Millisecond))
		if err == nil || time.Now().Add(backoff).After(deadline) {
			return c, err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// silent reports whether c sends nothing for wait: no challenge, nor a
// hang-up (which exchangeHello classifies).
func silent(c net.Conn, br *bufio.Reader, wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := br.Peek(1)
	return errors.Is(err, os.ErrDeadlineExceeded)
}
