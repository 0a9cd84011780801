package attachments

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// Store is the attachment store: image files named by the sha256 of their
// bytes under one directory,
//
//	<dir>/sha256/<hex[0:2]>/<hex>
//
// Media type and dimensions are read again from the file's header when it
// is opened, so the image file is the only record and nothing can disagree
// with it. Writers in this process and in others serialize on <dir>/.lock.
// A Store is safe for concurrent use.
type Store struct {
	dir    string
	limits Limits

	mu sync.Mutex // serializes batches within the process; .lock does across processes

	// hook, when set by a test, runs before each step of writing the n-th
	// new file of a batch (stage "write" before the data, "rename" before
	// the file becomes visible); an error aborts the batch there.
	hook func(stage string, n int) error
}

const (
	lockName   = ".lock"
	objectsDir = "sha256"
	tempPrefix = ".tmp-"
	idPrefix   = "sha256:"
)

// New returns the store rooted at dir (created if missing).
func New(dir string, limits *Limits) (*Store, error) {
	if dir == "" {
		return nil, errors.New("attachments: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("attachments: resolve %s: %w", dir, err)
	}
	var l Limits
	if limits != nil {
		l = *limits
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	s := &Store{dir: abs, limits: l.withDefaults()}
	if err := fsutil.MkdirAll(filepath.Join(abs, objectsDir), 0o700); err != nil {
		return nil, fmt.Errorf("attachments: create the store directory: %w", err)
	}
	if err := s.sweep(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir returns the store's directory, absolute.
func (s *Store) Dir() string { return s.dir }

// Limits returns the limits in force, defaults filled in.
func (s *Store) Limits() Limits { return s.limits }

// sweep removes temporary files a crashed writer left behind. Writers hold
// the lock while their temporary files exist, so under the lock every one
// found is stale.
func (s *Store) sweep() error {
	unlock, err := fsutil.Lock(filepath.Join(s.dir, lockName))
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	defer unlock()
	shards, err := os.ReadDir(filepath.Join(s.dir, objectsDir))
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	for _, sh := range shards {
		if !sh.IsDir() {
			continue
		}
		d := filepath.Join(s.dir, objectsDir, sh.Name())
		ents, err := os.ReadDir(d)
		if err != nil {
			return fmt.Errorf("attachments: %w", err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), tempPrefix) {
				if err := os.Remove(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("attachments: remove a stale temporary file: %w", err)
				}
			}
		}
	}
	return nil
}

// SaveImages validates every member, then persists all of them or none.
// References come back in input order. A refusal is an *Error.
func (s *Store) SaveImages(ctx context.Context, batch []Image) ([]Ref, error) {
	items, err := validate(batch, s.limits)
	if err != nil {
		return nil, err
	}
	for i := range items {
		sum := sha256.Sum256(items[i].data)
		items[i].hex = hex.EncodeToString(sum[:])
		items[i].ref.ID = idPrefix + items[i].hex
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("attachments: nothing saved: %w", err)
	}
	if err := s.persist(ctx, items); err != nil {
		return nil, err
	}
	refs := make([]Ref, len(items))
	for i, it := range items {
		refs[i] = it.ref
	}
	return refs, nil
}

// persist writes the members the store does not hold yet. On any failure
// it removes the files this batch created (never one that was there
// before), so the batch leaves nothing behind.
func (s *Store) persist(ctx context.Context, items []checked) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := fsutil.Lock(filepath.Join(s.dir, lockName))
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	defer unlock()

	var created, createdDirs []string
	touched := map[string]bool{}
	defer func() {
		if err == nil {
			return
		}
		for _, p := range append(created, createdDirs...) {
			if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("attachments: roll back %s: %w", p, rerr))
			}
		}
		if len(createdDirs) > 0 {
			touched[filepath.Join(s.dir, objectsDir)] = true
		}
		for d := range touched {
			fsutil.SyncDir(d) // best effort: the batch already failed
		}
	}()

	n := 0
	done := map[string]bool{}
	for _, it := range items {
		if done[it.hex] {
			continue
		}
		done[it.hex] = true
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("attachments: nothing saved: %w", err)
		}
		final := s.objectPath(it.hex)
		if fi, err := os.Lstat(final); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(it.data)) {
			continue // content-addressed: the same name holds the same bytes
		}
		shard := filepath.Dir(final)
		if _, err := os.Lstat(shard); errors.Is(err, fs.ErrNotExist) {
			if err := fsutil.MkdirAll(shard, 0o700); err != nil {
				return fmt.Errorf("attachments: save %s: %w", it.ref.ID, err)
			}
			createdDirs = append(createdDirs, shard)
		}
		n++
		touched[shard] = true
		if err := s.writeObject(shard, final, it.data, n); err != nil {
			return fmt.Errorf("attachments: save %s: %w", it.ref.ID, err)
		}
		created = append(created, final)
	}
	for d := range touched {
		if err := fsutil.SyncDir(d); err != nil {
			return fmt.Errorf("attachments: %w", err)
		}
	}
	return nil
}

// writeObject writes data to a temporary file in shard, fsyncs it and
// renames it to final. The temporary file never outlives a failure.
func (s *Store) writeObject(shard, final string, data []byte, n int) (err error) {
	f, err := os.CreateTemp(shard, tempPrefix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if err = s.step("write", n); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if err = s.step("rename", n); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

func (s *Store) step(stage string, n int) error {
	if s.hook == nil {
		return nil
	}
	return s.hook(stage, n)
}

func (s *Store) objectPath(hex string) string {
	return filepath.Join(s.dir, objectsDir, hex[:2], hex)
}

// parseID returns the hex digest of a well-formed id.
func parseID(id string) (string, error) {
	h, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return "", fmt.Errorf("%w %q: want sha256: and 64 lowercase hex digits", ErrInvalidRef, id)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", fmt.Errorf("%w %q: want sha256: and 64 lowercase hex digits", ErrInvalidRef, id)
		}
	}
	return h, nil
}

// Stat returns the reference stored under id ("sha256:<hex>").
func (s *Store) Stat(id string) (Ref, error) {
	f, ref, err := s.open(id)
	if err != nil {
		return Ref{}, err
	}
	f.Close()
	return ref, nil
}

// Open opens the image stored under id. The caller closes the reader.
func (s *Store) Open(id string) (io.ReadCloser, Ref, error) {
	f, ref, err := s.open(id)
	if err != nil {
		return nil, Ref{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, Ref{}, fmt.Errorf("attachments: open %s: %w", id, err)
	}
	return f, ref, nil
}

// open opens the file of id and reads its ref from the header. The id is
// checked before it becomes a path, and the file is opened within the
// store's directory only (os.OpenInRoot), so no id reaches outside it.
func (s *Store) open(id string) (*os.File, Ref, error) {
	h, err := parseID(id)
	if err != nil {
		return nil, Ref{}, err
	}
	rel := filepath.Join(objectsDir, h[:2], h)
	// The store writes only regular files; anything else under an object's
	// name was planted and is not followed.
	if fi, err := os.Lstat(filepath.Join(s.dir, rel)); err == nil && !fi.Mode().IsRegular() {
		return nil, Ref{}, fmt.Errorf("attachment %s: %w (%s is not a regular file)", id, ErrNotFound, filepath.Join(s.dir, rel))
	}
	f, err := os.OpenInRoot(s.dir, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Ref{}, fmt.Errorf("attachment %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, Ref{}, fmt.Errorf("attachments: open %s: %w", id, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, Ref{}, fmt.Errorf("attachment %s: %w", id, ErrNotFound)
	}
	br := bufio.NewReader(f)
	head, _ := br.Peek(12)
	t := sniff(head)
	cfg, err := decodeConfig(t, br)
	if err != nil {
		f.Close()
		return nil, Ref{}, fmt.Errorf("attachment %s is damaged on disk (delete %s): %w", id, filepath.Join(s.dir, rel), err)
	}
	return f, Ref{ID: id, MediaType: t, Bytes: fi.Size(), Width: cfg.Width, Height: cfg.Height}, nil
}
