package match

// FIFO is a growable ring buffer queue. Its zero value is empty and ready.
type FIFO[T comparable] struct {
	buf  []T
	head int
	n    int
}

// Len returns how many elements q holds.
func (q *FIFO[T]) Len() int { return q.n }

// Push appends v.
func (q *FIFO[T]) Push(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

func (q *FIFO[T]) grow() {
	nb := make([]T, max(1, 2*len(q.buf))) // from 1: most queues hold one element (a tag used once)
	for i := 0; i < q.n; i++ {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

// Peek returns the first element, if any, leaving it.
func (q *FIFO[T]) Peek() (T, bool) {
	var zero T
	if q.n == 0 {
		return zero, false
	}
	return q.buf[q.head], true
}

// Pop takes the first element, if any.
func (q *FIFO[T]) Pop() (T, bool) {
	var zero T
	if q.n == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v, true
}

// Remove deletes the first element equal to v, keeping the order of the
// rest, and reports whether it was found.
func (q *FIFO[T]) Remove(v T) bool {
	var zero T
	for i := 0; i < q.n; i++ {
		if q.buf[(q.head+i)%len(q.buf)] != v {
			continue
		}
		for j := i; j < q.n-1; j++ {
			q.buf[(q.head+j)%len(q.buf)] = q.buf[(q.head+j+1)%len(q.buf)]
		}
		q.buf[(q.head+q.n-1)%len(q.buf)] = zero
		q.n--
		return true
	}
	return false
}

// Each calls f for every element in order.
func (q *FIFO[T]) Each(f func(T)) {
	for i := 0; i < q.n; i++ {
		f(q.buf[(q.head+i)%len(q.buf)])
	}
}

// Reset empties the queue, keeping its storage.
func (q *FIFO[T]) Reset() {
	clear(q.buf)
	q.head, q.n = 0, 0
}

// Trim drops the storage of an empty queue that grew past n elements, so
// that a queue kept for reuse does not keep a flood's worth of it.
func (q *FIFO[T]) Trim(n int) {
	if q.n == 0 && len(q.buf) > n {
		q.buf, q.head = nil, 0
	}
}

// RemoveFunc deletes the first element for which f reports true, keeping
// the order of the rest, and returns it.
func (q *FIFO[T]) RemoveFunc(f func(T) bool) (T, bool) {
	for i := 0; i < q.n; i++ {
		if v := q.buf[(q.head+i)%len(q.buf)]; f(v) {
			q.Remove(v)
			return v, true
		}
	}
	var zero T
	return zero, false
}
