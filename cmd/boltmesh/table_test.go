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
		writeCongestionNote(&b, rep, c.flag)
		if !bytes.HasPrefix(b.Bytes(), []byte(c.want)) {
			t.Errorf("--congestion %q: note %q, want it to start with %q", c.flag, b.String(), c.want)
		}
	}
	var b bytes.Buffer
	writeCongestionNote(&b, &bench.Report{Results: rep.Results}, "")
	if b.Len() != 0 {
		t.Errorf("with the system's congestion control unknown, the note is %q, want none", b.String())
	}
}
