package engine

// Validate checks opts as the constructors (FromListener, Bind,
// CoordinatorListen, WorkerDial) do, without building anything: the
// fields' ranges (an *OptionError naming the field) and whether this
// system can set Options.Congestion (ErrCongestion). A tool can thus
// refuse a bad option before it starts any process.
func (o Options) Validate() error {
	v, err := o.withDefaults()
	if err != nil {
		return err
	}
	return checkCongestion(v.Congestion)
}
