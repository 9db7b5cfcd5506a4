package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
)

// maxKeyFile bounds a key file's size: a key is a line, not a document.
const maxKeyFile = 4096

// meshKey returns the mesh key: --key-file's, else $BOLTMESH_KEY, else
// nil (no key).
func meshKey(keyFile string, getenv func(string) string) ([]byte, error) {
	if keyFile != "" {
		return readKeyFile(keyFile)
	}
	if k := getenv("BOLTMESH_KEY"); k != "" {
		return []byte(k), nil
	}
	return nil, nil
}

// readKeyFile reads the mesh key in file: its bytes, trailing line ends
// removed. It refuses a file whose mode lets anyone but its owner read or
// write it, and one that is empty, not a regular file or over maxKeyFile
// bytes.
func readKeyFile(file string) ([]byte, error) {
	bad := func(format string, args ...any) error { return flagErr("key-file", file, format, args...) }
	f, err := os.Open(file)
	if err != nil {
		return nil, bad("%v", pathCause(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, bad("%v", pathCause(err))
	case !fi.Mode().IsRegular():
		return nil, bad("not a regular file (boltmesh keygen writes a key file)")
	case fi.Mode().Perm()&0o044 != 0:
		return nil, bad("mode %04o is readable by others; chmod 600 %s", fi.Mode().Perm(), file)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, bad("mode %04o is writable by others; chmod 600 %s", fi.Mode().Perm(), file)
	}
	k, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	switch k = bytes.TrimRight(k, "\r\n"); {
	case err != nil:
		return nil, bad("%v", pathCause(err))
	case len(k) > maxKeyFile:
		return nil, bad("over %d bytes: not a key (boltmesh keygen writes one)", maxKeyFile)
	case len(k) == 0:
		return nil, bad("is empty (boltmesh keygen writes a key)")
	}
	return k, nil
}

// pathCause strips the path from a *fs.PathError, which the flag error
// names already.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
