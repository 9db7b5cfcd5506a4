package sealed

// Gens returns how many key updates the write and read sides made.
func (s *Stream) Gens() (w, r uint32) { return s.w.gen, s.r.gen }

// HireCrew makes the crew n-1 goroutines strong now (before a test
// counts its goroutines).
func HireCrew(n int) { hireCrew(n) }

// CrewJobs returns how many records the crew sealed or opened so far.
func CrewJobs() uint64 { return crewDone.Load() }
