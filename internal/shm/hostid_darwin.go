//go:build darwin

package shm

import "golang.org/x/sys/unix"

// hostParts returns kern.bootsessionuuid.
func hostParts() ([]string, error) {
	boot, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return nil, &HostIDError{Source: "sysctl kern.bootsessionuuid", Err: err}
	}
	if boot == "" {
		return nil, &HostIDError{Source: "sysctl kern.bootsessionuuid", Err: ErrEmpty}
	}
	return []string{boot}, nil
}

// machineParts is the boot session alone (all of hostParts).
func machineParts() ([]string, error) { return hostParts() }
