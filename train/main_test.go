package train

import (
	"sync"
	"testing"
)

var mnist struct {
	once        sync.Once
	train, test *Dataset
	err         error
}

// loadMNIST loads MNIST once per test binary, or skips when it is not
// in the module cache.
func loadMNIST(t testing.TB) (trainSet, testSet *Dataset) {
	t.Helper()
	mnist.once.Do(func() {
		dir, err := DataDir()
		if err != nil {
			mnist.err = err
			return
		}
		mnist.train, mnist.test, mnist.err = LoadMNIST(dir)
	})
	if mnist.err != nil {
		t.Fatalf("MNIST: %v", mnist.err)
	}
	return mnist.train, mnist.test
}
