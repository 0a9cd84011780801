package host

import "path/filepath"

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

// builtinFile is the File of an entry the host adds for a built-in
// plugin the composition does not list: it names no file to resolve by.
const builtinFile = "(built-in)"

// EntryPath is path, a path in an entry's config, as the host takes it: a
// relative one is relative to the directory of file, the entry's file, so
// that a composition means the same wherever the host starts (an agent
// CLI starts `serve --stdio -c FILE` in its own directory). path is
// returned as it is when absolute or empty, or when the entry came from
// no file. Every reader of such a key, in the host or not, resolves it
// here, so that they find the same place.
func EntryPath(file, path string) string {
	if path == "" || filepath.IsAbs(path) || file == "" || file == builtinFile {
		return path
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return path
	}
	return filepath.Join(filepath.Dir(abs), path)
}
