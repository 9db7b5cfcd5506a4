package train_test

import (
	"fmt"
	"log"
	"net"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/train"
)

// One rank's part of a 2-rank run: every rank runs this with its own
// rank and the same peer list, data and Config.
func Example() {
	rank, peers := 0, []string{"127.0.0.1:7000", "127.0.0.1:7001"}
	ln, err := net.Listen("tcp", peers[rank])
	if err != nil {
		log.Fatal(err)
	}
	t, err := engine.FromListener(rank, len(peers), ln, peers, engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	dir, err := train.DataDir()
	if err != nil {
		log.Fatal(err)
	}
	trainSet, testSet, err := train.LoadMNIST(dir)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := train.New(t, trainSet, testSet, train.Config{Epochs: 2, Batch: 64, LR: 0.1})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(func(ep train.Epoch) {
		fmt.Printf("epoch %d: loss %.3f, test accuracy %.1f%%\n", ep.Epoch, ep.Loss, 100*ep.TestAccuracy)
	}); err != nil {
		log.Fatal(err)
	}
}
