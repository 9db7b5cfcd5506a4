package c10dtest

import (
	"os"
	"os/exec"
)

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
