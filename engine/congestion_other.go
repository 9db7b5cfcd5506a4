//go:build !linux && !freebsd

package engine

import "errors"

var errNoPerSocketCongestion = errors.New("this system has no per-socket TCP_CONGESTION")

// setFDCongestion fails: the congestion control is system-wide here.
func setFDCongestion(fd int, name string) error { return errNoPerSocketCongestion }

// fdCongestion fails: the congestion control is system-wide here.
func fdCongestion(fd int) (string, error) { return "", errNoPerSocketCongestion }

// probeCongestion fails: the congestion control is system-wide here.
func probeCongestion(name string) error { return errNoPerSocketCongestion }
