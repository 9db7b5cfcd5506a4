package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// Fuzz targets for the rendezvous messages: rank 0 reading a hello from
// a fuzzed rank (FuzzRendezvousServe), and a rank reading the challenge
// and the peer list from a fuzzed rank 0 (FuzzRendezvousJoin). Each side
// runs over a Unix socket pair against a scripted other side that sends either the
// fuzzer's raw bytes or a well-formed message built from its fields,
// right or wrong in one chosen way, so that both garbage and nearly-valid
// messages are explored.

// fuzzKey is the mesh key of the keyed cases.
var fuzzKey = []byte("fuzz key")

// countConn counts the bytes read through it.
type countConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// pipeDeadline bounds every pipe operation of one fuzz iteration.
const pipeDeadline = 10 * time.Second

// rendezvousErr reports whether err is one of the failures a rendezvous
// side may report for a bad message: a sentinel of the CLI, a JSON error,
// or the end of the connection.
func rendezvousErr(err error) bool {
	var se *json.SyntaxError
	var ue *json.UnmarshalTypeError
	for _, s := range []error{errMeshKey, errReplay, errBadHello, errLineTooLong, errRefused, io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, os.ErrDeadlineExceeded} {
		if errors.Is(err, s) {
			return true
		}
	}
	return errors.As(err, &se) || errors.As(err, &ue)
}

// Ways a scripted message is built (the low bits of shape).
const (
	msgRaw     = iota // the fuzzer's bytes, as they are
	msgValid          // well-formed and right
	msgWrong          // well-formed, with one thing wrong (chosen by shape)
	msgSpliced        // a well-formed message with the fuzzer's bytes spliced into its JSON
)

// goWrite writes b to c in a goroutine of its own, and then shuts c's
// write side down if last; the channel closes when that is done.
func goWrite(c net.Conn, b []byte, last bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Write(b)
		if last {
			c.(*net.UnixConn).CloseWrite()
		}
	}()
	return done
}

// socketPair returns the two ends of a Unix stream socket pair.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cs [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		cs[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return cs[0], cs[1]
}

// splice inserts raw into the JSON object line just after its '{'.
func splice(line, raw []byte) []byte {
	out := append([]byte{'{'}, raw...)
	return append(out, line[1:]...)
}

// FuzzRendezvousServe: rank 0 (a rendezvous server of 4 ranks) reads one
// hello. It accepts it only if its MAC is right, it answers this
// challenge, its own nonce is one, its world and rank fit and its address
// is host:port; whatever it refuses, the rank is told why in one JSON
// line; it never reads much past a hello line's bound; and a well-formed,
// right hello is accepted.
func FuzzRendezvousServe(f *testing.F) {
	f.Add(uint8(msgValid), 1, 4, "127.0.0.1:7001", []byte{})
	f.Add(uint8(msgValid|4), 3, 4, "[::1]:9", []byte{})
	f.Add(uint8(msgWrong), 1, 4, "127.0.0.1:7001", []byte{})
	f.Add(uint8(msgWrong|0x10), 1, 4, "127.0.0.1:7001", []byte{})
	f.Add(uint8(msgWrong|0x20), 0, 4, ":1", []byte{})
	f.Add(uint8(msgRaw), 0, 0, "", []byte("{\"rank\":1}\n"))
	f.Add(uint8(msgRaw), 0, 0, "", bytes.Repeat([]byte{'x'}, maxHelloLine+10))
	f.Add(uint8(msgSpliced), 2, 4, "h:1", []byte(`"RANK":3,`))
	f.Add(uint8(msgSpliced|4), 2, 4, "h:1", []byte(`"mac":"00",`))
	f.Add(uint8(msgValid), 1, 4, strings.Repeat("a", maxAddrLen-2)+":1", []byte{})

	f.Fuzz(func(t *testing.T, shape uint8, rank, world int, addr string, raw []byte) {
		keyed := shape&4 != 0
		s := &rendezvousServer{world: 4, self: "127.0.0.1:7000"}
		key := []byte(nil)
		if keyed {
			s.key, key = fuzzKey, fuzzKey
		}
		srv, cli := socketPair(t)
		srv.SetDeadline(time.Now().Add(pipeDeadline))
		cli.SetDeadline(time.Now().Add(pipeDeadline))
		cc := &countConn{Conn: srv}

		type sent struct {
			nonce   string // the challenge's
			line    []byte
			valid   bool   // a well-formed hello that must be accepted
			answer  []byte // what rank 0 wrote after the challenge
			readErr error
		}
		done := make(chan sent, 1)
		go func() {
			defer cli.Close()
			var out sent
			br := bufio.NewReader(cli)
			var ch challenge
			if out.readErr = readLine(br, maxChallenge, &ch); out.readErr != nil {
				done <- out
				return
			}
			out.nonce = ch.Nonce
			out.line, out.valid = helloLine(shape, rank, world, addr, raw, ch.Nonce, key)
			wrote := goWrite(cli, out.line, true) // rank 0 may answer before it read it all
			out.answer, _ = io.ReadAll(br)
			<-wrote
			done <- out
		}()
		h, err := s.readHello(cc)
		srv.Close()
		got := <-done
		if got.readErr != nil {
			t.Fatalf("the challenge: %v", got.readErr)
		}
		if !isNonce(got.nonce) {
			t.Fatalf("challenge nonce %q", got.nonce)
		}
		if n := cc.n.Load(); n > maxHelloLine+4096 {
			t.Fatalf("rank 0 read %d bytes of a hello, bound %d", n, maxHelloLine)
		}
		if err != nil {
			if got.valid {
				t.Fatalf("a right hello %q was refused: %v", got.line, err)
			}
			if !rendezvousErr(err) {
				t.Fatalf("hello %q refused with %v (%T), not a rendezvous failure", got.line, err, err)
			}
			var r reply
			if len(got.answer) > 0 && (json.Unmarshal(got.answer, &r) != nil || r.Error == "" || len(r.Peers) > 0) {
				t.Fatalf("refusal %q is not one error line", got.answer)
			}
			return
		}
		switch {
		case !macOK(key, h.content(), h.MAC):
			t.Fatalf("accepted %+v with a wrong MAC", h)
		case h.Server != got.nonce:
			t.Fatalf("accepted %+v answering nonce %q, not the challenge's %q", h, h.Server, got.nonce)
		case !isNonce(h.Nonce):
			t.Fatalf("accepted %+v without a nonce", h)
		case h.World != s.world || h.Rank < 1 || h.Rank >= s.world:
			t.Fatalf("accepted %+v in a world of %d", h, s.world)
		case checkAddr(h.Addr) != nil:
			t.Fatalf("accepted %+v with a bad address", h)
		case len(got.answer) > 0:
			t.Fatalf("accepted %+v but answered %q", h, got.answer)
		}
	})
}

// helloLine is the scripted rank's hello line answering nonce, and
// whether it is a well-formed, right one.
func helloLine(shape uint8, rank, world int, addr string, raw []byte, nonce string, key []byte) ([]byte, bool) {
	if shape&3 == msgRaw {
		return raw, false
	}
	h := hello{Rank: rank, World: world, Addr: addr, Server: nonce, Nonce: newNonce()}
	if shape&3 == msgWrong {
		switch shape >> 4 & 3 {
		case 0:
			h.Server = newNonce() // answers another challenge
		case 1:
			h.Nonce = string(raw) // not a nonce (or, by chance, one)
		case 2:
			key = []byte("another key")
		}
	}
	h.MAC = mac(key, h.content())
	if shape&3 == msgWrong && shape>>4&3 == 3 {
		h.Rank++ // after the MAC: it no longer covers the hello
	}
	line, _ := json.Marshal(h)
	valid := shape&3 == msgValid && world == 4 && rank >= 1 && rank < 4 && checkAddr(addr) == nil && utf8.ValidString(addr)
	if shape&3 == msgSpliced {
		line, valid = splice(line, raw), false
	}
	return append(line, '\n'), valid
}

// FuzzRendezvousJoin: a rank of a world of 3 reads rank 0's challenge and
// peer list from a scripted rank 0. It returns peers only if the reply's
// MAC is right, it answers this rank's hello (both nonces) and lists one
// peer per rank; it answers only a challenge with a nonce, with a hello
// whose MAC covers that challenge; it never reads much past each line's
// bound; and a well-formed, right reply is accepted.
func FuzzRendezvousJoin(f *testing.F) {
	f.Add(uint8(msgValid), "a:1,b:2,c:3", []byte{})
	f.Add(uint8(msgValid|4), "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", []byte{})
	f.Add(uint8(msgWrong), "a:1,b:2,c:3", []byte{})
	f.Add(uint8(msgWrong|0x10), "a:1,b:2", []byte{})
	f.Add(uint8(msgWrong|0x20|4), "a:1,b:2,c:3", []byte{})
	f.Add(uint8(msgWrong|0x30), "a:1,b:2,c:3", []byte("refused"))
	f.Add(uint8(msgRaw), "", []byte("{\"peers\":[\"a\",\"b\",\"c\"]}\n"))
	f.Add(uint8(msgRaw|8), "", []byte("{\"nonce\":\"zz\"}\n"))
	f.Add(uint8(msgSpliced), "a:1,b:2,c:3", []byte(`"Peers":["x"],`))
	f.Add(uint8(msgValid), "", bytes.Repeat([]byte{'x'}, 100))

	f.Fuzz(func(t *testing.T, shape uint8, peers string, raw []byte) {
		const world = 3
		keyed := shape&4 != 0
		rawChallenge := shape&8 != 0
		key := []byte(nil)
		if keyed {
			key = fuzzKey
		}
		cli, srv := socketPair(t)
		srv.SetDeadline(time.Now().Add(pipeDeadline))
		cli.SetDeadline(time.Now().Add(pipeDeadline))
		cc := &countConn{Conn: cli}

		type script struct {
			nonce  string // the challenge's
			hello  hello
			helloE error
			reply  []byte
			valid  bool // a well-formed reply that must be accepted
			list   []string
		}
		done := make(chan script, 1)
		go func() {
			defer srv.Close()
			var sc script
			br := bufio.NewReader(srv)
			line := raw // the rank may answer before it read it all
			if !rawChallenge {
				sc.nonce = newNonce()
				line, _ = json.Marshal(challenge{Nonce: sc.nonce})
				line = append(line, '\n')
			}
			// Without a newline the rank would wait for the rest of the
			// challenge: say there is none.
			wrote := goWrite(srv, line, !bytes.Contains(line, []byte{'\n'}))
			if sc.helloE = readLine(br, maxHelloLine, &sc.hello); sc.helloE == nil {
				<-wrote
				sc.reply, sc.valid, sc.list = replyLine(shape, peers, raw, sc.hello, key)
				wrote = goWrite(srv, sc.reply, true)
			}
			io.Copy(io.Discard, br)
			<-wrote
			done <- sc
		}()
		list, err := exchangeHello(cc, hello{Rank: 1, World: world, Addr: "127.0.0.1:7001"}, key)
		cli.Close()
		sc := <-done
		if n := cc.n.Load(); n > int64(maxChallenge+maxReplyLine(world)+2*4096) {
			t.Fatalf("the rank read %d bytes", n)
		}
		if sc.helloE == nil {
			// The rank answered a challenge: it must have had a nonce, which
			// the hello answers under a MAC covering it.
			if !rawChallenge && (sc.hello.Server != sc.nonce || !macOK(key, sc.hello.content(), sc.hello.MAC) || !isNonce(sc.hello.Nonce)) {
				t.Fatalf("hello %+v does not answer challenge %q under the key", sc.hello, sc.nonce)
			}
			if rawChallenge && !isNonce(sc.hello.Server) {
				t.Fatalf("the rank answered challenge %q, which has no nonce", raw)
			}
		}
		if err != nil {
			if sc.valid {
				t.Fatalf("a right reply %q was refused: %v", sc.reply, err)
			}
			return
		}
		if sc.helloE != nil {
			t.Fatalf("the rank returned peers %q but rank 0 read no hello: %v", list, sc.helloE)
		}
		var r reply
		if json.Unmarshal(bytes.TrimSuffix(sc.reply, []byte{'\n'}), &r) != nil {
			// Only the first line counts: the rank reads up to its newline.
			line, _, _ := bytes.Cut(sc.reply, []byte{'\n'})
			if json.Unmarshal(line, &r) != nil {
				t.Fatalf("the rank accepted %q, which is no reply", sc.reply)
			}
		}
		switch {
		case r.Error != "":
			t.Fatalf("the rank accepted a refusal %q", sc.reply)
		case !macOK(key, r.content(), r.MAC):
			t.Fatalf("the rank accepted %q with a wrong MAC", sc.reply)
		case r.Nonce != sc.hello.Nonce || r.Server != sc.hello.Server:
			t.Fatalf("the rank accepted %q answering other nonces than its hello %+v", sc.reply, sc.hello)
		case len(list) != world || strings.Join(list, "\x00") != strings.Join(r.Peers, "\x00"):
			t.Fatalf("the rank returned %q from reply %q", list, sc.reply)
		}
	})
}

// replyLine is the scripted rank 0's reply to h, whether it is a
// well-formed, right one, and the peer list it carries.
func replyLine(shape uint8, peers string, raw []byte, h hello, key []byte) ([]byte, bool, []string) {
	if shape&3 == msgRaw {
		return raw, false, nil
	}
	list := strings.Split(peers, ",")
	r := reply{Peers: list, Server: h.Server, Nonce: h.Nonce}
	if shape&3 == msgWrong {
		switch shape >> 4 & 3 {
		case 0:
			r.Nonce = newNonce() // answers another hello
		case 1:
			r.Server = string(raw)
		case 2:
			key = []byte("another key")
		case 3:
			r = reply{Error: string(raw) + "refused"}
		}
	}
	r.MAC = mac(key, r.content())
	line, _ := json.Marshal(r)
	valid := shape&3 == msgValid && len(list) == 3 && len(line) < maxReplyLine(3) && utf8.ValidString(peers)
	if shape&3 == msgSpliced {
		line, valid = splice(line, raw), false
	}
	return append(line, '\n'), valid, list
}
