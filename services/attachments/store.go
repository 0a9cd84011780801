package attachments

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// Store is the attachment store: image (and blob) files named by the
// sha256 of their bytes under one directory,
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

	// decoding holds a token per downscale running (FitImage), up to
	// decodeSlots.
	decoding chan struct{}

	// hook, when set by a test, runs before each step of writing the n-th
	// new file of a batch (stage "write" before the data, "rename" before
	// the file becomes visible) and before the batch commits ("commit");
	// an error aborts the batch there.
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
	s := &Store{dir: abs, limits: l.withDefaults(), decoding: make(chan struct{}, decodeSlots)}
	if err := fsutil.MkdirAll(filepath.Join(abs, objectsDir), 0o700); err != nil {
		return nil, fmt.Errorf("attachments: create the store directory: %w", err)
	}
	unlock, err := fsutil.Lock(filepath.Join(abs, lockName))
	if err != nil {
		return nil, fmt.Errorf("attachments: %w", err)
	}
	defer unlock()
	if err := s.recoverCrashed(true); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir returns the store's directory, absolute.
func (s *Store) Dir() string { return s.dir }

// Limits returns the limits in force, defaults filled in.
func (s *Store) Limits() Limits { return s.limits }

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

// persist writes the members the store does not hold yet: all of them or,
// whatever happens, none.
//
// Under the lock it first undoes what a crashed writer left (recoverCrashed).
// Then it lists the files it is about to create in a journal
// (<dir>/.batch-*.json), writes them, and removes the journal once every
// one is durable: that removal commits the batch. On a failure it removes
// the files again; after a crash, the next writer or the next New does,
// from the journal. Files that were there before the batch are never
// removed.
func (s *Store) persist(ctx context.Context, items []checked) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := fsutil.Lock(filepath.Join(s.dir, lockName))
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	defer unlock()
	if err := s.recoverCrashed(false); err != nil {
		return err
	}

	// Each new content once; a file of the right size under its hash is
	// the same image (a damaged one is rewritten, but not journaled: rolling
	// back must not remove what was there before).
	var todo []checked
	var j journal
	seen := map[string]bool{}
	newShard := map[string]bool{}
	for _, it := range items {
		if seen[it.hex] {
			continue
		}
		seen[it.hex] = true
		// The shard first: a file reached through a planted one is no
		// image of the store's (its reads refuse it).
		shard := it.hex[:2]
		sfi, serr := os.Lstat(filepath.Join(s.dir, objectsDir, shard))
		if serr == nil && !sfi.IsDir() {
			return plantedShard(filepath.Join(s.dir, objectsDir, shard), sfi)
		}
		fi, err := os.Lstat(s.objectPath(it.hex))
		if err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(it.data)) {
			continue
		}
		todo = append(todo, it)
		if err != nil {
			j.Objects = append(j.Objects, it.hex)
		}
		if serr != nil && !newShard[shard] {
			newShard[shard] = true
			j.Dirs = append(j.Dirs, shard)
		}
	}
	// The objects directory too: a write through a link would land
	// outside the store (reads refuse it, as os.OpenInRoot does).
	if fi, err := os.Lstat(filepath.Join(s.dir, objectsDir)); err == nil && !fi.IsDir() {
		return plantedShard(filepath.Join(s.dir, objectsDir), fi)
	}
	if len(todo) == 0 {
		return nil
	}
	jpath, err := s.writeJournal(&j)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		if rerr := s.undo(&j); rerr != nil {
			// The journal stays: the next writer tries again.
			err = errors.Join(err, rerr)
			return
		}
		if rerr := os.Remove(jpath); rerr == nil {
			fsutil.SyncDir(s.dir) // best effort: a journal left behind is replayed harmlessly
		}
	}()

	touched := map[string]bool{}
	for n, it := range todo {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("attachments: nothing saved: %w", err)
		}
		final := s.objectPath(it.hex)
		shard := filepath.Dir(final)
		if err := fsutil.MkdirAll(shard, 0o700); err != nil {
			return fmt.Errorf("attachments: save %s: %w", it.ref.ID, err)
		}
		// Checked again now that it exists: one planted since the check
		// above is refused too, and the batch rolls back.
		if fi, err := os.Lstat(shard); err != nil || !fi.IsDir() {
			if err == nil {
				err = plantedShard(shard, fi)
			}
			return fmt.Errorf("attachments: save %s: %w", it.ref.ID, err)
		}
		touched[shard] = true
		if err := s.writeObject(shard, final, it.data, n+1); err != nil {
			return fmt.Errorf("attachments: save %s: %w", it.ref.ID, err)
		}
	}
	for d := range touched {
		if err := fsutil.SyncDir(d); err != nil {
			return fmt.Errorf("attachments: %w", err)
		}
	}
	if err := s.step("commit", 0); err != nil {
		return err
	}
	if err := os.Remove(jpath); err != nil {
		return fmt.Errorf("attachments: commit the batch: %w", err)
	}
	// From here the files stay. Should the removal of the journal not be
	// durable, a crash brings it back and the batch is undone: the caller,
	// told of the failure, holds no ref to it.
	committed = true
	if err := fsutil.SyncDir(s.dir); err != nil {
		return fmt.Errorf("attachments: commit the batch: %w", err)
	}
	return nil
}

// journal lists what an unfinished batch created: object hashes, and shard
// directories that did not exist before it.
type journal struct {
	Objects []string `json:"objects"`
	Dirs    []string `json:"dirs,omitempty"`
}

const journalPrefix = ".batch-"

func (s *Store) writeJournal(j *journal) (string, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return "", err
	}
	p := filepath.Join(s.dir, journalPrefix+rand.Text()+".json")
	if err := fsutil.WriteFile(p, b, 0o600); err != nil {
		return "", fmt.Errorf("attachments: write the batch journal: %w", err)
	}
	return p, nil
}

// undo removes what j lists.
func (s *Store) undo(j *journal) error {
	var errs []error
	for _, h := range j.Objects {
		if len(h) != 2*sha256.Size || !isLowerHex(h) {
			return fmt.Errorf("attachments: a batch journal names %q, not an object; remove the journal by hand", h)
		}
		if err := os.Remove(s.objectPath(h)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("attachments: roll back %s: %w", h, err))
		}
	}
	for _, d := range j.Dirs {
		if len(d) != 2 || !isLowerHex(d) {
			return fmt.Errorf("attachments: a batch journal names %q, not a shard; remove the journal by hand", d)
		}
		// Only if empty: another batch may have put files there since.
		os.Remove(filepath.Join(s.dir, objectsDir, d))
	}
	objs := filepath.Join(s.dir, objectsDir)
	for _, h := range j.Objects {
		fsutil.SyncDir(filepath.Join(objs, h[:2])) // best effort, as the removals may have emptied it
	}
	if err := fsutil.SyncDir(objs); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// recoverCrashed undoes the batches whose writer died before committing
// them, and removes the temporary files it left. Writers hold the lock from
// their journal to its removal, so under the lock every journal found is a
// dead writer's. The shards are searched for temporary files only when a
// journal says a writer died, or when all is true (a new Store).
func (s *Store) recoverCrashed(all bool) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	var journals []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, journalPrefix) && strings.HasSuffix(name, ".json"):
			journals = append(journals, filepath.Join(s.dir, name))
		case strings.Contains(name, journalPrefix): // a journal's own temporary file
			if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("attachments: remove a stale temporary file: %w", err)
			}
		}
	}
	// Temporary files first: they keep the shards a journal lists from
	// being empty, hence removed.
	if all || len(journals) > 0 {
		if err := s.sweep(); err != nil {
			return err
		}
	}
	for _, p := range journals {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("attachments: read the batch journal: %w", err)
		}
		var j journal
		if err := json.Unmarshal(b, &j); err != nil {
			return fmt.Errorf("attachments: the batch journal %s is damaged (%v); remove it by hand", p, err)
		}
		if err := s.undo(&j); err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("attachments: remove %s: %w", p, err)
		}
		if err := fsutil.SyncDir(s.dir); err != nil {
			return fmt.Errorf("attachments: %w", err)
		}
	}
	return nil
}

// sweep removes the temporary object files a crashed writer left behind.
func (s *Store) sweep() error {
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

// plantedShard refuses a directory of the store that is a symlink or
// another non-directory: the store makes only real directories, so
// whatever else stands there was planted, and writing through it would
// put an image outside the store.
func plantedShard(path string, fi fs.FileInfo) error {
	what := "not a directory"
	if fi.Mode()&fs.ModeSymlink != 0 {
		what = "a symlink"
	}
	return fmt.Errorf("attachments: nothing saved: %s is %s, not a directory the store made; remove it (the store never follows links when writing)", path, what)
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
	if !ok || len(h) != 2*sha256.Size || !isLowerHex(h) {
		return "", fmt.Errorf("%w %q: want sha256: and 64 lowercase hex digits", ErrInvalidRef, id)
	}
	return h, nil
}

func isLowerHex(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
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

// Open opens the image or blob stored under id. The caller closes the reader.
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
	head, _ := br.Peek(512)
	t := sniff(head)
	if t == "" {
		// A blob (SaveBlob): only its bytes are kept, so they say its type.
		return f, Ref{ID: id, MediaType: detectBlobType(head), Bytes: fi.Size()}, nil
	}
	cfg, err := decodeConfig(t, br)
	if err != nil {
		f.Close()
		return nil, Ref{}, fmt.Errorf("attachment %s is damaged on disk (delete %s): %w", id, filepath.Join(s.dir, rel), err)
	}
	return f, Ref{ID: id, MediaType: t, Bytes: fi.Size(), Width: cfg.Width, Height: cfg.Height}, nil
}
