package bench

import "testing"

// SetTestHookListen makes f see every baseline listener's address (see
// testHookListen) until the test ends.
func SetTestHookListen(t testing.TB, f func(rank int, addr string)) {
	testHookListen = f
	t.Cleanup(func() { testHookListen = nil })
}
