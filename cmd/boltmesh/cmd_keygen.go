package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

const keygenHeader = `Usage: boltmesh keygen [--force] FILE
       boltmesh keygen [--force] -o FILE

Writes a new mesh key to FILE, with mode 0600: 32 random bytes from the
system's cryptographic generator, hex-encoded on one line (64
characters, so that it also fits in an environment variable). It refuses
to overwrite an existing FILE unless --force is given.

Give every rank the same key, with --key-file FILE (copy the file to the
other hosts, keeping mode 0600; --key-file refuses a file others can
read), or in the environment: BOLTMESH_KEY="$(cat FILE)". Every
connection of the mesh (and the rendezvous, and the stdnet baseline)
then proves it holds the key. A local run (boltmesh bench --ranks N)
needs none: it makes a new key of its own for the ranks it starts.
`

// keyBytes is the size of a generated key, before hex encoding.
const keyBytes = 32

func cmdKeygen(args []string, stdout, stderr io.Writer) error {
	fl := newFlagSet("keygen", keygenHeader, stdout)
	out := fl.String("o", "", "write the key to `file`")
	force := fl.Bool("force", false, "overwrite an existing file")
	pos, err := parseFlags(fl, args)
	if err != nil {
		return err
	}
	file := *out
	switch {
	case len(pos) > 1:
		return usageErr("want one FILE, got %d arguments", len(pos))
	case len(pos) == 1 && file != "":
		return usageErr("give FILE or -o FILE, not both")
	case len(pos) == 1:
		file = pos[0]
	case file == "":
		return usageErr("want the FILE to write the key to (boltmesh keygen mesh.key)")
	}
	if err := writeKey(file, *force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a new %d-bit mesh key to %s (mode 0600)\n", 8*keyBytes, file)
	fmt.Fprintf(stdout, "use it on every rank: --key-file %s, or BOLTMESH_KEY=\"$(cat %s)\"\n", file, file)
	return nil
}

// writeKey writes a new key to file with mode 0600: created, or with
// force replacing an existing file (through a temporary file renamed over
// it, so that file is never half written).
func writeKey(file string, force bool) error {
	text := append(newKey(), '\n')
	if !force {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w (--force overwrites it)", file, fs.ErrExist)
		}
		if err != nil {
			return err
		}
		return finishKey(f, text, file)
	}
	f, err := os.CreateTemp(filepath.Dir(file), ".boltmesh-key-*")
	if err != nil {
		return err
	}
	if err := finishKey(f, text, f.Name()); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), file); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// newKey returns a new mesh key: keyBytes bytes from the system's
// cryptographic generator, hex-encoded.
func newKey() []byte {
	var k [keyBytes]byte
	rand.Read(k[:]) // never fails (crypto/rand)
	return []byte(hex.EncodeToString(k[:]))
}

// finishKey writes text to f (whose name is name), sets its mode to 0600
// and closes it; on failure it removes it.
func finishKey(f *os.File, text []byte, name string) error {
	_, err := f.Write(text)
	err = errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close())
	if err != nil {
		os.Remove(name)
	}
	return err
}
