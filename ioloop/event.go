package ioloop

// event is one fd's readiness as reported by the poller.
type event struct {
	fd       int
	readable bool
	writable bool
}
