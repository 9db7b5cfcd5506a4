package sealed

// Gens returns how many key updates the write and read sides made.
func (s *Stream) Gens() (w, r uint32) { return s.w.gen, s.r.gen }
