package bench

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/fuzzkit"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// FuzzControl: the harness's control messages as a rank other than 0
// decodes them. Rank 0 of a 2-rank mesh (in this process, kept across
// iterations) sends the fuzzer's bytes where the harness sends a control
// message, and rank 1 decodes them as one of: the run's Config (then
// validated), an integer, the iteration count of a case's timed loop,
// the address list, or a verdict. Each must decode what it is sent
// exactly, or fail with an error; never panic or hang.
func FuzzControl(f *testing.F) {
	m := meshtest.Kept{N: 2, Opts: engine.Options{Logger: slog.New(slog.DiscardHandler), Spin: -1}}
	f.Cleanup(m.Reset)
	cfg, _ := json.Marshal(Config{Suites: []string{"p2p"}, Sizes: []int{8, 1 << 20}, Plan: Plan{Iters: 3}})
	f.Add(uint8(ctlConfig), cfg)
	f.Add(uint8(ctlConfig), []byte(`{"suites":["nope"]}`))
	f.Add(uint8(ctlConfig), []byte(`{"sizes":[-1],"plan":{"iters":-5}}`))
	f.Add(uint8(ctlConfig), []byte(`{"plan":{"min_iters":9,"max_iters":3}}`))
	f.Add(uint8(ctlConfig), []byte(`null`))
	f.Add(uint8(ctlInt), binary.LittleEndian.AppendUint64(nil, 7))
	f.Add(uint8(ctlInt), []byte{1, 2, 3})
	f.Add(uint8(ctlLoops), binary.LittleEndian.AppendUint64(nil, 6))
	f.Add(uint8(ctlLoops|0x50), binary.LittleEndian.AppendUint64(nil, 1<<63))
	f.Add(uint8(ctlAddrs), []byte("127.0.0.1:1,127.0.0.1:2"))
	f.Add(uint8(ctlAddrs), []byte("a,,b"))
	f.Add(uint8(ctlVerdict), []byte("rank 1: bytes differ"))

	f.Fuzz(func(t *testing.T, mode uint8, msg []byte) {
		ts, err := m.Get()
		if err != nil {
			t.Fatal(err)
		}
		defer fuzzkit.Guard(9*time.Second, func() string { return fmt.Sprintf("mode %#x message %q", mode, msg) })()
		ok := false
		defer func() {
			if !ok {
				m.Reset() // the mesh may hold messages of this iteration
			}
		}()
		r0, r1 := ts[0], control{ts[1]}
		switch mode & 7 % ctlModes {
		case ctlConfig:
			checkConfig(t, r0, r1, msg)
		case ctlInt:
			checkInt(t, r0, r1, msg)
		case ctlLoops:
			checkLoops(t, r0, r1, msg, mode>>3)
		case ctlAddrs:
			checkAddrs(t, r0, r1, msg)
		case ctlVerdict:
			checkVerdict(t, r0, r1, msg)
		}
		ok = !t.Failed()
	})
}

// What rank 1 decodes rank 0's message as.
const (
	ctlConfig = iota
	ctlInt
	ctlLoops
	ctlAddrs
	ctlVerdict
	ctlModes
)

// fromRank0 sends msg from rank 0 on the control tag, after receiving
// one control message from rank 1 if gather; it returns the error.
func fromRank0(r0 *engine.NetTransport, msg []byte, gather bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		if gather {
			if _, err := r0.Recv(1, tagControl); err != nil {
				done <- err
				return
			}
		}
		done <- r0.Send(1, tagControl, msg)
	}()
	return done
}

func checkConfig(t *testing.T, r0 *engine.NetTransport, r1 control, msg []byte) {
	sent := fromRank0(r0, msg, false)
	var got Config
	err := r1.bcastJSON(&got)
	if serr := <-sent; serr != nil {
		t.Fatal(serr)
	}
	var want Config
	werr := json.Unmarshal(msg, &want)
	if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, %v; json.Unmarshal gives %+v, %v", got, err, want, werr)
	}
	if err != nil {
		return
	}
	cfg, err := got.withDefaults()
	if err != nil {
		return
	}
	for _, name := range cfg.Suites {
		if Lookup(name) == nil {
			t.Fatalf("config %q accepted with unknown suite %q", msg, name)
		}
		for _, n := range cfg.SizesOf(name) {
			if n < 0 {
				t.Fatalf("config %q gives suite %s size %d", msg, name, n)
			}
		}
	}
	p := cfg.Plan
	if cfg.Baseline != BaselineStdnet && cfg.Baseline != BaselineNone || p.validate() != nil || p.Iters == 0 && p.Duration <= 0 {
		t.Fatalf("config %q accepted as %+v", msg, cfg)
	}
	(&world{ctl: r1}).cases(cfg)
}

func checkInt(t *testing.T, r0 *engine.NetTransport, r1 control, msg []byte) {
	sent := fromRank0(r0, msg, false)
	v, err := r1.bcastInt(0)
	if serr := <-sent; serr != nil {
		t.Fatal(serr)
	}
	switch {
	case len(msg) != 8 && err == nil:
		t.Fatalf("an integer of %d bytes decoded as %d", len(msg), v)
	case len(msg) == 8 && (err != nil || uint64(v) != binary.LittleEndian.Uint64(msg)):
		t.Fatalf("integer % x decoded as %d, %v", msg, v, err)
	}
}

// nopBody is a case body that does nothing.
type nopBody struct{}

func (nopBody) Iter(int) error   { return nil }
func (nopBody) Finish(int) error { return nil }

// checkLoops runs a case's loops on rank 1 with rank 0 sending msg as
// the timed iteration count, under a plan whose bounds shape chooses:
// the loops must run exactly that many iterations, if the plan allows
// it, or fail.
func checkLoops(t *testing.T, r0 *engine.NetTransport, r1 control, msg []byte, shape uint8) {
	plan := Plan{Warmup: 1, MinIters: int(shape & 3), MaxIters: int(shape>>2) * 10}
	if shape&0x10 != 0 {
		plan = Plan{Warmup: 1, Iters: int(shape & 15)}
	}
	n := int(binary.LittleEndian.Uint64(append(msg, make([]byte, 8)...)))
	allowed := len(msg) == 8 && plan.validate() == nil && n == plan.iters(time.Duration(n))
	if plan.Iters == 0 && len(msg) == 8 {
		lo, hi := plan.MinIters, plan.MaxIters
		if lo == 0 {
			lo = 5
		}
		if hi == 0 {
			hi = 200000
		}
		allowed = n >= lo && n <= max(lo, hi)
	}
	done := make(chan error, 1)
	go func() {
		err := r0.Send(1, tagControl, msg)
		if err == nil && allowed {
			err = r0.Barrier() // rank 1's barrier after the count
		}
		done <- err
	}()
	out, err := (&world{ctl: r1}).loops(Config{Plan: plan}, caseID{size: 8}, nopBody{})
	if serr := <-done; serr != nil {
		t.Fatal(serr)
	}
	switch {
	case allowed && (err != nil || out.st.N != n):
		t.Fatalf("plan %+v, count % x: ran %d iterations, %v; want %d", plan, msg, out.st.N, err, n)
	case !allowed && err == nil:
		t.Fatalf("plan %+v, count % x: ran %d iterations, want a refusal", plan, msg, out.st.N)
	}
}

func checkAddrs(t *testing.T, r0 *engine.NetTransport, r1 control, msg []byte) {
	sent := fromRank0(r0, msg, true)
	got, err := r1.addrs("127.0.0.1:2")
	if serr := <-sent; serr != nil {
		t.Fatal(serr)
	}
	want := strings.Split(string(msg), ",")
	valid := len(want) == 2 && want[0] != "" && want[1] != ""
	switch {
	case valid && (err != nil || !reflect.DeepEqual(got, want)):
		t.Fatalf("address list %q decoded as %q, %v", msg, got, err)
	case !valid && err == nil:
		t.Fatalf("address list %q for 2 ranks accepted as %q", msg, got)
	}
}

func checkVerdict(t *testing.T, r0 *engine.NetTransport, r1 control, msg []byte) {
	sent := fromRank0(r0, msg, true)
	got, err := r1.agree("")
	if serr := <-sent; serr != nil {
		t.Fatal(serr)
	}
	if err != nil || got != string(msg) {
		t.Fatalf("verdict %q decoded as %q, %v", msg, got, err)
	}
}
