package train

import (
	"errors"
	"fmt"
)

// ErrDiverged means the ranks' weights differed at a check.
var ErrDiverged = errors.New("train: the ranks' weights differ")

// ErrConfig means a Config field is invalid.
var ErrConfig = errors.New("train: invalid config")

// ErrNoData means the MNIST files were not found.
var ErrNoData = errors.New("train: MNIST data not found")

// DivergedError is the ErrDiverged of one check: the smallest and largest
// weight hash across the ranks after Step steps.
type DivergedError struct {
	Step     int
	Min, Max int64
}

func (e *DivergedError) Error() string {
	return fmt.Sprintf("train: after step %d the ranks' weight hashes range from %#x to %#x", e.Step, uint64(e.Min), uint64(e.Max))
}

// Unwrap returns ErrDiverged.
func (e *DivergedError) Unwrap() error { return ErrDiverged }

// ConfigError is the ErrConfig of one field.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "train: Config." + e.Field + ": " + e.Reason }

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// DataError is the ErrNoData of a search: the directories tried.
type DataError struct {
	Tried []string
}

func (e *DataError) Error() string {
	return fmt.Sprintf("train: MNIST files (train-images-idx3-ubyte.gz, ...) not found in %q; set BOLTMESH_MNIST to their directory", e.Tried)
}

// Unwrap returns ErrNoData.
func (e *DataError) Unwrap() error { return ErrNoData }
