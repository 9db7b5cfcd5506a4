package c10dtest

import (
	"errors"
	"os"
	"os/exec"
)

// ErrNoTorch means no Python that imports torch.distributed was found.
var ErrNoTorch = errors.New("no python3 that imports torch.distributed (apt-get install python3-torch)")

// TorchPython returns a Python interpreter that imports
// torch.distributed: $BOLTMESH_PYTHON, else Debian's /usr/bin/python3
// (where python3-torch installs), else python3 on $PATH.
func TorchPython() (string, error) {
	var try []string
	if p := os.Getenv("BOLTMESH_PYTHON"); p != "" {
		try = append(try, p)
	}
	try = append(try, "/usr/bin/python3")
	if p, err := exec.LookPath("python3"); err == nil {
		try = append(try, p)
	}
	for _, p := range try {
		if exec.Command(p, "-c", "import torch.distributed").Run() == nil {
			return p, nil
		}
	}
	return "", ErrNoTorch
}
