package main

import (
	"flag"

	"github.com/google/pprof/driver"
)

var _ driver.FlagSet = (*driverFlags)(nil)

// driverFlags hands pprof's driver a fixed command line.
type driverFlags struct {
	fs    *flag.FlagSet
	args  []string
	extra string
}

// Bool implements driver.FlagSet.
func (f *driverFlags) Bool(o string, d bool, c string) *bool { return f.fs.Bool(o, d, c) }

// Int implements driver.FlagSet.
func (f *driverFlags) Int(o string, d int, c string) *int { return f.fs.Int(o, d, c) }

// Float64 implements driver.FlagSet.
func (f *driverFlags) Float64(o string, d float64, c string) *float64 { return f.fs.Float64(o, d, c) }

// String implements driver.FlagSet.
func (f *driverFlags) String(o, d, c string) *string { return f.fs.String(o, d, c) }

// StringList implements driver.FlagSet.
func (f *driverFlags) StringList(o, d, c string) *[]*string {
	return &[]*string{f.fs.String(o, d, c)}
}

// ExtraUsage implements driver.FlagSet.
func (f *driverFlags) ExtraUsage() string { return f.extra }

// AddExtraUsage implements driver.FlagSet.
func (f *driverFlags) AddExtraUsage(eu string) { f.extra += eu }

// Parse implements driver.FlagSet.
func (f *driverFlags) Parse(usage func()) []string {
	f.fs.Usage = usage
	if err := f.fs.Parse(f.args); err != nil {
		return nil
	}
	return f.fs.Args()
}
