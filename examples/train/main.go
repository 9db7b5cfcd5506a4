// Command train is data-parallel MNIST training over boltmesh with the
// public API only: it builds a 2-rank mesh on loopback in this process,
// one goroutine per rank, trains one epoch on a subset with
// train.Trainer (one allreduce of the gradient per step) and prints each
// rank's loss and test accuracy, which match since the ranks hold the same
// weights.
//
//	go run ./examples/train [-ranks 2] [-samples 4096]
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"sync"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/train"
)

func main() {
	ranks := flag.Int("ranks", 2, "ranks, one goroutine each")
	samples := flag.Int("samples", 4096, "training samples (0: all 60000)")
	flag.Parse()
	dir, err := train.DataDir()
	if err != nil {
		log.Fatal(err)
	}
	trainSet, testSet, err := train.LoadMNIST(dir)
	if err != nil {
		log.Fatal(err)
	}
	trainSet, testSet = trainSet.Head(*samples), testSet.Head(2000)
	ts, err := mesh(*ranks)
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer t.Close()
			tr, err := train.New(t, trainSet, testSet, train.Config{Epochs: 1, Batch: 64, LR: 0.1})
			if err != nil {
				log.Fatal(err)
			}
			defer tr.Close()
			eps, err := tr.Run(nil)
			if err != nil {
				log.Fatal(err)
			}
			ep := eps[len(eps)-1]
			fmt.Printf("rank %d: loss %.4f, test accuracy %.2f%%, compute %.2fs, comm %.2fs\n",
				t.Rank(), ep.Loss, 100*ep.TestAccuracy, ep.ComputeS, ep.CommS)
		}()
	}
	wg.Wait()
}

// mesh builds an n-rank mesh on loopback in this process.
func mesh(n int) ([]*engine.NetTransport, error) {
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	ts := make([]*engine.NetTransport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts[r], errs[r] = engine.FromListener(r, n, lns[r], addrs, engine.Options{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ts, nil
}
