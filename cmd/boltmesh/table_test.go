package main

import (
	"bytes"
	"testing"

	"github.com/boltmesh/boltmesh/bench"
)

func TestCongestionNote(t *testing.T) {
	rep := &bench.Report{Host: bench.Host{Congestion: "bbr"}, Results: []bench.Result{{Suite: "p2p", Impl: bench.ImplBoltmesh}, {Suite: "p2p", Impl: bench.ImplStdnet}}}
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
	// stdnet's is named only if stdnet ran; boltmesh's only if one of
	// its pairs goes over TCP.
	b.Reset()
	boltOnly := &bench.Report{Host: rep.Host, Results: rep.Results[:1]}
	writeCongestionNote(&b, boltOnly, "reno", true)
	if want := "TCP congestion control: boltmesh reno\n"; b.String() != want {
		t.Errorf("no stdnet: note %q, want %q", b.String(), want)
	}
	b.Reset()
	writeCongestionNote(&b, boltOnly, "", false)
	if b.Len() != 0 {
		t.Errorf("shared memory only, no stdnet: note %q, want none", b.String())
	}
	writeCongestionNote(&b, rep, "", false)
	if want := "TCP congestion control: stdnet bbr (the system's); boltmesh's pairs use no TCP\n"; b.String() != want {
		t.Errorf("shared memory only, with stdnet: note %q, want %q", b.String(), want)
	}
}
