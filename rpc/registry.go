package rpc

import "maps"

// Register makes h callable under name by every rank (this one included).
// It fails with ErrExists if name is taken; use Replace to swap handlers.
func (a *Agent) Register(name string, h Handler) error {
	return a.setFunc(name, h, false)
}

// Replace registers h under name, replacing any handler there. Calls
// already running keep the handler they started with.
func (a *Agent) Replace(name string, h Handler) error {
	return a.setFunc(name, h, true)
}

// Unregister removes name and reports whether it was registered. Later
// calls to it fail with ErrFunctionNotFound; calls already queued or
// running finish with the handler they found.
func (a *Agent) Unregister(name string) bool {
	a.funcMu.Lock()
	defer a.funcMu.Unlock()
	old := *a.funcs.Load()
	if _, ok := old[name]; !ok {
		return false
	}
	m := maps.Clone(old)
	delete(m, name)
	a.funcs.Store(&m)
	return true
}

func (a *Agent) setFunc(name string, h Handler, replace bool) error {
	if len(name) == 0 || len(name) > MaxNameLen {
		return ErrBadName
	}
	if h == nil {
		return ErrNilHandler
	}
	a.funcMu.Lock()
	defer a.funcMu.Unlock()
	old := *a.funcs.Load()
	if _, ok := old[name]; ok && !replace {
		return ErrExists
	}
	m := maps.Clone(old)
	m[name] = h
	a.funcs.Store(&m)
	return nil
}

// lookup returns the handler registered under name, or nil. It does not
// allocate.
func (a *Agent) lookup(name []byte) Handler {
	return (*a.funcs.Load())[string(name)]
}
