package main

import (
	"bytes"
	"testing"

	"github.com/boltmesh/boltmesh/bench"
)

func TestCongestionNote(t *testing.T) {
	rep := &bench.Report{Host: bench.Host{Congestion: "bbr"}, Results: []bench.Result{{Suite: "p2p"}}}
	for _, c := range []struct{ flag, want string }{
		{"", "TCP congestion control: boltmesh cubic on loopback, bbr on other links; stdnet bbr"},
		{"system", "TCP congestion control: boltmesh bbr; stdnet bbr"},
		{"reno", "TCP congestion control: boltmesh reno; stdnet bbr"},
	} {
		var b bytes.Buffer
		writeCongestionNote(&b, rep, c.flag, true)
		if !bytes.HasPrefix(b.Bytes(), []byte(c.want)) {
			t.Errorf("--congestion %q: note %q, want it to start with %q", c.flag, b.String(), c.want)
		}
	}
	var b bytes.Buffer
	writeCongestionNote(&b, &bench.Report{Results: rep.Results}, "", true)
	if b.Len() != 0 {
		t.Errorf("with the system's congestion control unknown, the note is %q, want none", b.String())
	}
	// No boltmesh pair over TCP (every one over shared memory): only
	// stdnet's is named, and only if stdnet ran.
	b.Reset()
	writeCongestionNote(&b, rep, "", false)
	if b.Len() != 0 {
		t.Errorf("shared memory only, no stdnet: note %q, want none", b.String())
	}
	withStd := &bench.Report{Host: rep.Host, Results: []bench.Result{{Suite: "p2p", Impl: bench.ImplBoltmesh}, {Suite: "p2p", Impl: bench.ImplStdnet}}}
	writeCongestionNote(&b, withStd, "", false)
	if want := "TCP congestion control: stdnet bbr (the system's); boltmesh's pairs use no TCP\n"; b.String() != want {
		t.Errorf("shared memory only, with stdnet: note %q, want %q", b.String(), want)
	}
}
