package c10dtest

import "errors"

// ErrNoTorch means no Python that imports torch.distributed was found.
var ErrNoTorch = errors.New("no python3 that imports torch.distributed (apt-get install python3-torch)")
