package c10d_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/c10d"
	"github.com/boltmesh/boltmesh/internal/c10d/c10dtest"
)

// TestRealTorchStore runs the client against a real
// torch.distributed.TCPStore (testdata/torch_store.py, python3-torch):
// each side reads what the other wrote, through torch's own client on
// the Python side. It skips where torch is not importable.
func TestRealTorchStore(t *testing.T) {
	py, err := c10dtest.TorchPython()
	if errors.Is(err, c10dtest.ErrNoTorch) {
		t.Skipf("%v; `make torch` installs it", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/torch_store.py")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			cancel()
			cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(out)
	line := func() string {
		if !lines.Scan() {
			t.Fatalf("the store script stopped: %v\nstderr:\n%s", lines.Err(), stderr.String())
		}
		return lines.Text()
	}
	port, ok := strings.CutPrefix(line(), "port ")
	if !ok {
		t.Fatalf("the store script did not print its port")
	}
	c, err := c10d.Dial(ctx, "127.0.0.1:"+port, c10d.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Protocol() != c10d.ProtocolLegacy {
		t.Errorf("torch 1.13's store detected as %v, want %v", c.Protocol(), c10d.ProtocolLegacy)
	}
	if v, err := c.Get(ctx, "/py/key"); err != nil || string(v) != "from python" {
		t.Fatalf("Get(/py/key) = %q, %v", v, err)
	}
	for _, d := range [][2]int64{{40, 40}, {2, 42}} { // before go/key, which the script waits for
		if sum, err := c.Add(ctx, "/go/count", d[0]); err != nil || sum != d[1] {
			t.Fatalf("Add(%d) = %d, %v; want %d", d[0], sum, err, d[1])
		}
	}
	if err := c.Set(ctx, "/go/key", []byte("from go")); err != nil {
		t.Fatal(err)
	}
	if got := line(); got != "go/key from go" {
		t.Errorf("python read %q, want %q", got, "go/key from go")
	}
	if got := line(); got != "go/count 42" {
		t.Errorf("python read %q, want %q", got, "go/count 42")
	}
	if err := c.Wait(ctx, "/py/done"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Check(ctx, "/py/done", "/py/key", "/go/key"); err != nil || !ok {
		t.Errorf("Check = %v, %v", ok, err)
	}
	if ok, err := c.Check(ctx, "/nothing"); err != nil || ok {
		t.Errorf("Check(/nothing) = %v, %v", ok, err)
	}
	if ok, err := c.Delete(ctx, "/go/count"); err != nil || !ok {
		t.Errorf("Delete = %v, %v", ok, err)
	}
	if err := c.Set(ctx, "/go/bye", nil); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	waited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the store script: %v\nstderr:\n%s", err, stderr.String())
	}
}
