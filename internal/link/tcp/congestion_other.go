//go:build !linux && !freebsd

package tcp

// setFDCongestion fails: the congestion control is system-wide here.
func setFDCongestion(fd int, name string) error { return ErrNoPerSocketCongestion }

// fdCongestion fails: the congestion control is system-wide here.
func fdCongestion(fd int) (string, error) { return "", ErrNoPerSocketCongestion }

// probeCongestion fails: the congestion control is system-wide here.
func probeCongestion(name string) error { return ErrNoPerSocketCongestion }
