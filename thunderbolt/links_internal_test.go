package thunderbolt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSysfsLinks: interfaces are recognised by their driver or
// their name, with their MTU; others are left out.
func TestSysfsLinks(t *testing.T) {
	root := t.TempDir()
	mk := func(name, driver, mtu string) {
		dev := filepath.Join(root, name, "device")
		if err := os.MkdirAll(dev, 0o755); err != nil {
			t.Fatal(err)
		}
		if driver != "" {
			if err := os.Symlink("../../../bus/thunderbolt/drivers/"+driver, filepath.Join(dev, "driver")); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, name, "mtu"), []byte(mtu+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("eth0", "virtio_net", "1500")
	mk("tb-a", "thunderbolt-net", "1500")
	mk("thunderbolt1", "", "9000")
	got, err := sysfsLinks(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []LinkInfo{{Name: "tb-a", MTU: 1500, Why: "driver thunderbolt-net"}, {Name: "thunderbolt1", MTU: 9000, Why: "name"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if w := MTUWarning(got[0]); !strings.Contains(w, "tb-a") || !strings.Contains(w, "mtu 9000") {
		t.Errorf("MTU 1500: warning %q", w)
	}
	if w := MTUWarning(got[1]); w != "" {
		t.Errorf("MTU 9000: unexpected warning %q", w)
	}
	if _, err := sysfsLinks(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing sysfs directory gave no error")
	}
}
