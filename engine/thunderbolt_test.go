package engine_test

import (
	"net"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

func TestLooksLikeThunderbolt(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{
		{"169.254.10.2", true}, {"10.0.0.7", true}, {"192.168.1.2", false},
		{"127.0.0.1", false}, {"169.253.1.1", false}, {"fe80::1", false}, {"::ffff:169.254.1.1", true},
	} {
		if got := engine.LooksLikeThunderbolt(net.ParseIP(tc.ip)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.ip, got, tc.want)
		}
	}
	// The real interfaces of this machine: listing them must not fail.
	if _, err := engine.ThunderboltInterfaces(); err != nil {
		t.Fatal(err)
	}
}
