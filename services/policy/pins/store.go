package pins

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// pinFormat is the version of the pin files this code writes. Format 1
// (files without a version) pinned no input schema, format 2 no _meta:
// see upgradeLegacy.
const pinFormat = 3

// pinFile is one server's trusted tool definitions, kept in
// <pins.dir>/<serverName>.json (serverNames are safe file names).
type pinFile struct {
	Version int                  `json:"version"`
	Server  string               `json:"server"`
	Tools   map[string]pinRecord `json:"tools"` // by the tool's name on its server
	// Held is why the server is held until reviewed (quarantine.go): no
	// tool of it is trusted on first use. Trusting its tools clears it.
	Held string `json:"held,omitempty"`
}

// pinRecord is one trusted definition and its digest.
type pinRecord struct {
	Digest  string    `json:"digest"`
	Trusted time.Time `json:"trusted"`
	Tool    pinned    `json:"tool"`
	// Format is 1 for a record of a format-1 file not yet upgraded (its
	// digest leaves the input schema and _meta out), 2 for one of format 2
	// (it leaves _meta out), 0 for a current one.
	Format int `json:"format,omitempty"`
}

// pinStore reads and writes the pin files. A file is read again when it
// changed on disk (another process trusted a tool); writes take the
// file's lock and merge into what is on disk, so two processes lose
// nothing.
type pinStore struct {
	dir string
	mu  sync.Mutex
	// files caches each server's file as last read or written.
	files map[string]*cachedPins
	// gen counts changes of any file seen: a verdict holds while it does.
	gen atomic.Uint64
}

type cachedPins struct {
	file *pinFile // nil: the server has no file (never trusted)
	err  error    // the file does not read
	mod  time.Time
	size int64
}

func newPinStore(dir string) *pinStore {
	return &pinStore{dir: dir, files: map[string]*cachedPins{}}
}

func (s *pinStore) path(server string) string { return filepath.Join(s.dir, server+".json") }

// load returns server's pins, nil when it has none; an error when its file
// does not read (which is never overwritten).
func (s *pinStore) load(server string) (*pinFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.path(server)
	fi, err := os.Stat(path)
	c := s.files[server]
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if c == nil || c.file != nil || c.err != nil {
			s.files[server] = &cachedPins{}
			if c != nil {
				s.gen.Add(1)
			}
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	case c != nil && c.file != nil && c.mod.Equal(fi.ModTime()) && c.size == fi.Size():
		return c.file, c.err
	}
	f, err := readPinFile(path)
	s.files[server] = &cachedPins{file: f, err: err, mod: fi.ModTime(), size: fi.Size()}
	if c != nil {
		s.gen.Add(1)
	}
	return f, err
}

// update applies change to server's pins as they are on disk, under the
// file's lock, and writes them atomically.
func (s *pinStore) update(server string, change func(*pinFile)) error {
	return s.write(server, false, change)
}

// replace is update starting from no pins, whatever is on disk (a file
// that does not read included).
func (s *pinStore) replace(server string, change func(*pinFile)) error {
	return s.write(server, true, change)
}

func (s *pinStore) write(server string, fresh bool, change func(*pinFile)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := fsutil.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create the pins directory: %w", err)
	}
	path := s.path(server)
	unlock, err := fsutil.Lock(path + ".lock")
	if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer func() { _ = unlock() }()
	f, err := readPinFile(path)
	switch {
	case fresh || errors.Is(err, fs.ErrNotExist):
		f = &pinFile{Server: server}
	case err != nil:
		return fmt.Errorf("%w (fix or delete it; it is not overwritten)", err)
	}
	if f.Tools == nil {
		f.Tools = map[string]pinRecord{}
	}
	change(f)
	f.Version = pinFormat
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	c := &cachedPins{file: f}
	if fi, err := os.Stat(path); err == nil {
		c.mod, c.size = fi.ModTime(), fi.Size()
	}
	s.files[server] = c
	s.gen.Add(1)
	return nil
}

func readPinFile(path string) (*pinFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f pinFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s does not read as trusted tool definitions: %w", path, err)
	}
	if f.Version > pinFormat {
		return nil, fmt.Errorf("%s is of pin format %d, newer than this dsh-host reads (%d)", path, f.Version, pinFormat)
	}
	for name, rec := range f.Tools {
		// The file is indented: the stored side of a diff, and its
		// digest, are of the canonical form.
		t := &rec.Tool
		t.InputSchema, t.OutputSchema, t.Annotations, t.Meta = canonical(t.InputSchema), canonical(t.OutputSchema), canonical(t.Annotations), canonical(t.Meta)
		switch {
		case f.Version < 2:
			rec.Format = 1
		case f.Version < 3 && rec.Format == 0:
			rec.Format = 2
		}
		// A record whose definition is not the one its digest names
		// (edited by hand) would show a reviewer the wrong side.
		if rec.Tool.Name != name || rec.Tool.digest() != rec.Digest {
			return nil, fmt.Errorf("%s: the trusted definition of %q does not match its digest", path, name)
		}
		f.Tools[name] = rec
	}
	return &f, nil
}
