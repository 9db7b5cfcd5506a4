package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// check checks the mesh flags shared by bench and rank, before anything
// starts.
func (f *meshFlags) check() error {
	if f.timeout <= 0 {
		return flagErr("timeout", f.timeout.String(), "must be positive (how long to wait for every rank to join)")
	}
	if f.streams < 0 {
		return flagErr("streams", strconv.Itoa(f.streams), "must not be negative (0: the transport's default)")
	}
	for _, a := range [][2]string{{"bind", f.bind}, {"rendezvous", f.rendezvous}, {"coordinator", f.coordinator}} {
		if a[1] == "" {
			continue
		}
		if _, err := parseHostPort(a[1]); err != nil {
			return flagErr(a[0], a[1], "%v", err)
		}
	}
	return nil
}

// check checks the profile flags: where the files go, and --pprof's
// address.
func (f *profFlags) check() error {
	for _, o := range [][2]string{{"cpuprofile", f.cpu}, {"memprofile", f.mem}, {"mutexprofile", f.mutex}, {"blockprofile", f.block}} {
		if err := checkOutFile(o[0], o[1]); err != nil {
			return err
		}
	}
	if f.http != "" {
		if _, err := parseHostPort(f.http); err != nil {
			return flagErr("pprof", f.http, "%v", err)
		}
	}
	return nil
}

// parseHostPort checks that addr is host:port and returns the port.
func parseHostPort(addr string) (int, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, errors.New("want host:port")
	}
	n, err := net.LookupPort("tcp", port)
	if err != nil {
		return 0, errors.New("bad port " + strconv.Quote(port))
	}
	return n, nil
}

// checkPorts refuses port 0 where the other ranks must find the address
// on their own: --rendezvous and --coordinator of a run that bench does
// not start itself.
func checkPorts(f *meshFlags, m membership) error {
	if m.source == "local" {
		return nil
	}
	for _, a := range [][2]string{{"rendezvous", f.rendezvous}, {"coordinator", f.coordinator}} {
		if a[1] == "" {
			continue
		}
		if port, _ := parseHostPort(a[1]); port == 0 {
			return flagErr(a[0], a[1], "port 0: the other ranks could not find it; give a port")
		}
	}
	return nil
}

// checkPeers checks --peers: one dialable host:port per rank, each its
// own.
func checkPeers(list string, peers []string) error {
	seen := map[string]int{}
	for r, p := range peers {
		host, _, err := net.SplitHostPort(p)
		port, perr := parseHostPort(p)
		switch {
		case err != nil || perr != nil:
			return flagErr("peers", list, "rank %d's address %q is not host:port", r, p)
		case port == 0:
			return flagErr("peers", list, "rank %d's address %s has port 0; the others could not find it", r, p)
		}
		key := net.JoinHostPort(strings.ToLower(host), strconv.Itoa(port))
		if q, dup := seen[key]; dup {
			return flagErr("peers", list, "ranks %d and %d both have %s; each rank needs an address of its own", q, r, p)
		}
		seen[key] = r
	}
	return nil
}

// checkOutFile checks that an output file can be created where named:
// its directory exists, and it is not a directory itself.
func checkOutFile(flag, file string) error {
	if file == "" {
		return nil
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return flagErr(flag, file, "is a directory")
	}
	dir := filepath.Dir(file)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return flagErr(flag, file, "directory %s: %v", dir, pathCause(err))
	case !fi.IsDir():
		return flagErr(flag, file, "%s is not a directory", dir)
	}
	return nil
}

// checkOutDir checks that an output directory exists or can be made: its
// nearest existing ancestor is a directory.
func checkOutDir(flag, dir string) error {
	if dir == "" {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return flagErr(flag, dir, "%s is not a directory", d)
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return flagErr(flag, dir, "%v", pathCause(err))
		case filepath.Dir(d) == d:
			return nil
		}
	}
}
