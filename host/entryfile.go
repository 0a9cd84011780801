package host

// EntryFile returns the file the instance's entry was read from (the
// composition, or a file it includes), so that a plugin can point a user
// at a line of its config; "" on a scope made by NewScope or for an entry
// built in code.
func (s *Scope) EntryFile() string {
	if s.inst == nil {
		return ""
	}
	h := s.inst.host
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.inst.entry.File
}
