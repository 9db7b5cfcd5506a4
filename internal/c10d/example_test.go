package c10d_test

import (
	"context"
	"fmt"
	"log"

	"github.com/boltmesh/boltmesh/internal/c10d"
	"github.com/boltmesh/boltmesh/internal/c10d/c10dtest"
)

// Two clients meet through a store: one publishes, the other's Get
// waits for the key.
func ExampleDial() {
	store, err := c10dtest.Start(c10dtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	a, err := c10d.Dial(ctx, store.Addr(), c10d.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := c10d.Dial(ctx, store.Addr(), c10d.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	done := make(chan []byte)
	go func() {
		v, err := b.Get(ctx, "/job/rank/1")
		if err != nil {
			log.Fatal(err)
		}
		done <- v
	}()
	if err := a.Set(ctx, "/job/rank/1", []byte("10.0.0.2:7001")); err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Protocol(), string(<-done))
	// Output: legacy (torch 1.x-2.0) 10.0.0.2:7001
}
