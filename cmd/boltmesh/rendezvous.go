package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strings"
)

// The rendezvous: rank 0 listens at a known address; every other rank
// connects, sends its rank and listen address, and receives the address
// list of the whole mesh once every rank has checked in. Messages are JSON
// lines, each read with a bound on its length:
//
//	rank 0                                     rank r
//	accept  ── challenge {"nonce": N0} ─────────>
//	        <── hello {"rank", "world", "addr", "server": N0, "nonce": Nr, "mac"}
//	(every rank in)
//	        ── reply {"peers", "server": N0, "nonce": Nr, "mac"} ──>
//	        or, refused, {"error": "..."}
//
// N0 and Nr are fresh random nonces. With a mesh key the hello's MAC
// (HMAC-SHA256) covers N0 and the reply's covers Nr, so a stranger can
// neither take a rank's slot nor hand the ranks a forged peer list, and a
// recorded hello or reply cannot be replayed to another rendezvous. Rank
// 0 serves every connection concurrently, each under its own handshake
// deadline (see internal/admit), so idle or garbage connections delay no
// one.

// Bounds of the rendezvous lines and fields.
const (
	nonceBytes     = 32
	maxAddrLen     = 512  // a rank's address in its hello
	maxChallenge   = 256  // rank 0's challenge line
	maxHelloLine   = 4096 // a rank's hello line
	maxReplyHeader = 4096 // a reply line without its peer list
)

// maxReplyLine bounds rank 0's reply in a world of n ranks: the peer
// list's addresses, each JSON-escaped at worst 6 bytes per byte.
func maxReplyLine(n int) int { return maxReplyHeader + n*(6*maxAddrLen+3) }

// challenge is rank 0's first line on every connection.
type challenge struct {
	Nonce string `json:"nonce"`
}

// hello is what a rank sends rank 0.
type hello struct {
	Rank   int    `json:"rank"`
	World  int    `json:"world"`
	Addr   string `json:"addr"`
	Server string `json:"server"` // rank 0's nonce, echoed
	Nonce  string `json:"nonce"`  // this rank's
	MAC    string `json:"mac,omitempty"`
}

// reply is rank 0's answer.
type reply struct {
	Peers  []string `json:"peers,omitempty"`
	Server string   `json:"server,omitempty"` // rank 0's nonce
	Nonce  string   `json:"nonce,omitempty"`  // the rank's, echoed
	Error  string   `json:"error,omitempty"`
	MAC    string   `json:"mac,omitempty"`
}

// content is what a message's MAC covers: its fields as a JSON array, so
// that no two messages read alike.
func content(fields ...any) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

func (h hello) content() string {
	return content("hello", h.Rank, h.World, h.Addr, h.Server, h.Nonce)
}

func (r reply) content() string { return content("peers", r.Peers, r.Server, r.Nonce) }

// mac authenticates content with key; "" without a key.
func mac(key []byte, content string) string {
	if len(key) == 0 {
		return ""
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte("boltmesh rendezvous\x00" + content))
	return hex.EncodeToString(h.Sum(nil))
}

// macOK reports whether got is content's MAC under key ("" without a
// key).
func macOK(key []byte, content, got string) bool {
	return hmac.Equal([]byte(mac(key, content)), []byte(got))
}

// checkMAC checks a message's MAC got over content against key: nil if
// macOK, else errNoKeyProof when it has none and key is set,
// errUnexpectedKeyProof when it has one and key is not, errMeshKey when it
// was made with another key.
func checkMAC(key []byte, content, got string) error {
	switch {
	case macOK(key, content, got):
		return nil
	case got == "":
		return errNoKeyProof
	case len(key) == 0:
		return errUnexpectedKeyProof
	}
	return errMeshKey
}

// newNonce returns a fresh random nonce, hex-encoded.
func newNonce() string {
	b := make([]byte, nonceBytes)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// isNonce reports whether s looks like a nonce of newNonce's.
func isNonce(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == nonceBytes
}

// readLine reads one '\n'-terminated line of at most max bytes (newline
// included) into v, failing with errLineTooLong as soon as the line
// passes max, without reading further.
func readLine(br *bufio.Reader, max int, v any) error {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return fmt.Errorf("%w: over %d bytes", errLineTooLong, max)
		}
		line = append(line, frag...)
		if err == nil {
			return json.Unmarshal(line, v)
		}
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

// writeLine writes v as one JSON line.
func writeLine(c net.Conn, v any) error {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = c.Write(append(b, '\n'))
	}
	return err
}

// checkAddr checks a rank's address in its hello.
func checkAddr(addr string) error {
	if len(addr) > maxAddrLen {
		return fmt.Errorf("%w: a %d-byte address", errBadHello, len(addr))
	}
	if _, _, err := net.SplitHostPort(addr); err != nil || strings.ContainsAny(addr, ",\n") {
		return fmt.Errorf("%w: address %q is not host:port", errBadHello, addr)
	}
	return nil
}

// fillHost replaces an empty or unspecified host in addr by the IP of via
// (the local or remote side of a connection that reached the right place).
func fillHost(addr string, via net.Addr) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return addr
	}
	if ta, ok := via.(*net.TCPAddr); ok {
		return net.JoinHostPort(ta.IP.String(), port)
	}
	return addr
}
