package sealed

import (
	"crypto/cipher"
	"sync"
	"sync/atomic"
)

// The crew seals and opens the records of one large write or read on
// several cores at once: a record's nonce is its number, known before the
// records ahead of it are sealed, so records are independent. A Stream
// plans a batch (headers written, plaintexts gathered, nonces taken, in
// order), hands all but the first record to the crew, does the first
// itself and waits. The crew is shared by every Stream of the process:
// as many goroutines as the largest Options.Crew asked for, less one,
// started on first use, for the life of the process.

// crewMin is the least plaintext of a batch worth splitting.
const crewMin = 128 << 10

// crewMax is the most records of one batch.
const crewMax = 16

// crewJobs feeds the crew, of crewHired goroutines; crewDone counts the
// jobs it did.
var (
	crewJobs  = make(chan *job, 4*crewMax)
	crewMu    sync.Mutex
	crewHired int
	crewDone  atomic.Uint64
)

// job is one record to seal or open: dst, src and ad as the AEAD's Seal
// or Open take them (ad is the record's header).
type job struct {
	aead    cipher.AEAD
	nonce   [NonceSize]byte
	dst     []byte
	src, ad []byte
	open    bool
	rec     uint64 // the record's number under its key
	failed  bool   // Open refused it
	wg      *sync.WaitGroup
}

// do seals or opens j's record.
func (j *job) do() {
	if j.open {
		_, err := j.aead.Open(j.dst, j.nonce[:], j.src, j.ad)
		j.failed = err != nil
		return
	}
	j.aead.Seal(j.dst, j.nonce[:], j.src, j.ad)
}

// batch is one side's jobs, reused: jobs[:n] are planned, size bytes of
// plaintext in all.
type batch struct {
	jobs [crewMax]job
	n    int
	size int
	wg   sync.WaitGroup
}

// plan adds a job: d's next nonce for n bytes of plaintext.
func (b *batch) plan(d *direction, n int, dst, src, ad []byte, open bool) {
	j := &b.jobs[b.n]
	b.n++
	b.size += n
	j.rec = d.records
	j.aead, j.dst, j.src, j.ad, j.open, j.failed, j.wg = d.aead, dst, src, ad, open, false, &b.wg
	copy(j.nonce[:], d.next(n))
}

// room reports whether the batch takes k more jobs.
func (b *batch) room(k int) bool { return b.n+k <= crewMax }

// run does every planned job, with the crew where the batch is worth it
// and crew (the goroutines to use, the caller's included) is above 1, and
// empties the plan (the jobs keep their outcome until the next plan).
func (b *batch) run(crew int) {
	if b.n > 1 && b.size >= crewMin && crew > 1 {
		b.wg.Add(b.n - 1)
		for i := 1; i < b.n; i++ {
			crewJobs <- &b.jobs[i]
		}
		b.jobs[0].do()
		b.wg.Wait()
	} else {
		for i := range b.n {
			b.jobs[i].do()
		}
	}
	b.n, b.size = 0, 0
}

// hireCrew makes the crew at least n-1 goroutines strong.
func hireCrew(n int) {
	crewMu.Lock()
	defer crewMu.Unlock()
	for ; crewHired < n-1; crewHired++ {
		go crewWork()
	}
}

// crewWork is a crew goroutine's life: doing jobs.
func crewWork() {
	for j := range crewJobs {
		j.do()
		crewDone.Add(1)
		j.wg.Done()
	}
}
