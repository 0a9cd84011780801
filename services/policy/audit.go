package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/internal/fsutil"
	"github.com/dsh-host/dsh-host/services/tools"
)

// AuditConfig is the `audit` key of the policy's config.
type AuditConfig struct {
	// Enabled writes one line per call (default true).
	Enabled bool `yaml:"enabled"`
	// Arguments writes the arguments' values too; without it a line has
	// only their SHA-256 and size, as arguments may hold secrets.
	Arguments bool `yaml:"arguments"`
	// Dir is where the trail is written (default $DSH_HOME/audit).
	Dir string `yaml:"dir"`
	// MaxSize is the size in bytes past which the current file is rotated
	// (default 16 MiB).
	MaxSize int64 `yaml:"maxSize"`
	// Keep is how many rotated files are kept (default 5).
	Keep int `yaml:"keep"`
}

// Audit file names: the current file, and rotated ones, which sort by
// the time they were rotated.
const (
	AuditFile       = "audit.jsonl"
	auditLock       = "audit.lock"
	rotatedPrefix   = "audit-"
	rotatedSuffix   = ".jsonl"
	DefaultAuditMax = 16 << 20
	defaultKeep     = 5
)

// Record is one line of the audit trail.
type Record struct {
	Time       time.Time       `json:"time"`
	Caller     RecordCaller    `json:"caller"`
	Tool       string          `json:"tool"`
	Server     string          `json:"server,omitempty"`
	ArgsSHA256 string          `json:"argsSha256"`
	ArgsSize   int             `json:"argsSize"`
	Args       json.RawMessage `json:"args,omitempty"`
	// Decision is the policy's action (allow, ask, deny), "" when the
	// call ended before the policy (an unknown tool).
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	// Answer is how an ask was answered: once, session, always, --yes or
	// no.
	Answer string `json:"answer,omitempty"`
	// Outcome is ok, failed (the tool's own failure), error, refused,
	// unknown or canceled.
	Outcome    string  `json:"outcome"`
	Error      string  `json:"error,omitempty"`
	DurationMs float64 `json:"durationMs"`
	ResultSize int     `json:"resultSize"`
}

// RecordCaller is who called, as far as the host knows.
type RecordCaller struct {
	Kind    string `json:"kind"`
	ID      string `json:"id,omitempty"`
	Subject string `json:"subject,omitempty"`
	Client  string `json:"client,omitempty"`
}

// AuditLog appends records to a directory's current file, one write per
// line (O_APPEND, so that lines from parallel calls and from other
// processes never interleave), rotating it by size under a file lock.
type AuditLog struct {
	dir     string
	maxSize int64
	keep    int

	mu sync.RWMutex // writers share it; reopening takes it alone
	f  *os.File
	// size is f's size at open plus what this process appended since: a
	// Stat per line would cost as much as the write. Other processes'
	// lines make the file rotate later than maxSize, never earlier.
	size atomic.Int64
}

// OpenAudit opens (creating) the audit trail in dir.
func OpenAudit(dir string, maxSize int64, keep int) (*AuditLog, error) {
	if maxSize <= 0 {
		maxSize = DefaultAuditMax
	}
	if keep <= 0 {
		keep = defaultKeep
	}
	if err := fsutil.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit directory: %w", err)
	}
	l := &AuditLog{dir: dir, maxSize: maxSize, keep: keep}
	if err := l.reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *AuditLog) reopen() error {
	f, err := os.OpenFile(filepath.Join(l.dir, AuditFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the audit trail: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open the audit trail: %w", err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f = f
	l.size.Store(st.Size())
	return nil
}

// Close closes the current file.
func (l *AuditLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Write appends rec as one line.
func (l *AuditLog) Write(rec *Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return l.WriteLine(append(line, '\n'))
}

// WriteLine appends one whole line (it ends in "\n") in a single write.
func (l *AuditLog) WriteLine(line []byte) error {
	l.mu.RLock()
	if l.f == nil {
		l.mu.RUnlock()
		return os.ErrClosed
	}
	_, err := l.f.Write(line)
	full := err == nil && l.size.Add(int64(len(line))) >= l.maxSize
	l.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("write the audit trail: %w", err)
	}
	if full {
		return l.rotate()
	}
	return nil
}

// rotate renames a full current file aside, unless another writer (of
// this process or another) did already, and reopens the current one.
func (l *AuditLog) rotate() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return os.ErrClosed
	}
	unlock, err := fsutil.Lock(filepath.Join(l.dir, auditLock))
	if err != nil {
		return fmt.Errorf("lock the audit trail: %w", err)
	}
	defer unlock()
	cur := filepath.Join(l.dir, AuditFile)
	mine, err := l.f.Stat()
	if err != nil {
		return err
	}
	if st, err := os.Stat(cur); err == nil && os.SameFile(st, mine) && mine.Size() >= l.maxSize {
		name := fmt.Sprintf("%s%s%s", rotatedPrefix, time.Now().UTC().Format("20060102T150405.000000000Z"), rotatedSuffix)
		if err := os.Rename(cur, filepath.Join(l.dir, name)); err != nil {
			return fmt.Errorf("rotate the audit trail: %w", err)
		}
		l.prune()
	}
	return l.reopen()
}

// prune removes the oldest rotated files beyond keep.
func (l *AuditLog) prune() {
	old, err := rotatedFiles(l.dir)
	if err != nil || len(old) <= l.keep {
		return
	}
	for _, name := range old[:len(old)-l.keep] {
		os.Remove(name)
	}
}

// rotatedFiles lists dir's rotated files, oldest first.
func rotatedFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, rotatedPrefix) && strings.HasSuffix(n, rotatedSuffix) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out, nil
}

// AuditFiles lists the trail's files in dir, oldest first, the current
// one last (when it exists).
func AuditFiles(dir string) ([]string, error) {
	out, err := rotatedFiles(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, AuditFile)); err == nil {
		out = append(out, filepath.Join(dir, AuditFile))
	}
	return out, nil
}

// record builds a call's audit record.
func record(f tools.Finished, withArgs bool) *Record {
	sum := sha256.Sum256(f.Args)
	rec := &Record{
		Time:       f.Started.UTC(),
		Caller:     RecordCaller{Kind: f.Caller.Kind, ID: f.Caller.ID},
		Tool:       f.Name,
		ArgsSHA256: hex.EncodeToString(sum[:]),
		ArgsSize:   len(f.Args),
		DurationMs: float64(f.Duration.Microseconds()) / 1000,
	}
	if id := f.Caller.Identity; id != nil {
		rec.Caller.Subject, rec.Caller.Client = id.Subject, id.Client
	}
	if withArgs && json.Valid(f.Args) {
		rec.Args = f.Args
	}
	if d, ok := f.Note(noteKey{}).(Decision); ok {
		rec.Decision, rec.Rule, rec.Answer = d.Action, d.Rule, d.Answer
	}
	if srv, ok := f.Note(serverNoteKey{}).(string); ok {
		rec.Server = srv
	}
	res := f.Result
	for _, c := range res.Content {
		rec.ResultSize += len(c.Text)
	}
	var denial *Denial
	switch {
	case res.Err == nil && res.Failed:
		rec.Outcome = "failed"
	case res.Err == nil:
		rec.Outcome = "ok"
	case errors.As(res.Err, &denial):
		rec.Outcome = "refused"
		rec.Error = res.Err.Error()
	case errors.Is(res.Err, tools.ErrUnknownTool):
		rec.Outcome = "unknown"
	case errors.Is(res.Err, tools.ErrRefused):
		rec.Outcome = "refused"
		rec.Error = res.Err.Error()
	case isCanceled(res.Err):
		rec.Outcome = "canceled"
	default:
		rec.Outcome = "error"
		rec.Error = res.Err.Error()
	}
	if len(rec.Error) > maxErrorText {
		rec.Error = rec.Error[:maxErrorText] + "…"
	}
	return rec
}

// maxErrorText bounds an error's text in a line: the tool's own errors
// may be long, and a line is for finding calls, not reading results.
const maxErrorText = 500

// serverNoteKey is the key of the tool's server among a call's notes.
type serverNoteKey struct{}
