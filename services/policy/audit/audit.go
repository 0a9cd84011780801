// Package audit is the policy's audit trail: one JSON line per tool call
// (Record), appended by Log to a directory's current file, rotated by
// size, and chained by hash across its files so that Verify finds a
// changed, cut or dropped line. What goes into a Record is the policy's
// business (services/policy builds it from a finished call); this package
// only writes, lists and checks the trail.
//
//	l, err := audit.Open(dir, maxSize, keep) // one per policy instance
//	l.Write(&audit.Record{...})              // per call; safe across processes
//	check, err := audit.Verify(dir)          // *audit.Break names the first bad line
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// Audit file names: the current file, and rotated ones, which sort by
// the time they were rotated.
const (
	File           = "audit.jsonl"
	auditLock      = "audit.lock"
	rotatedPrefix  = "audit-"
	rotatedSuffix  = ".jsonl"
	DefaultMaxSize = 16 << 20
	DefaultKeep    = 5
)

// Record is one line of the audit trail.
type Record struct {
	Time       time.Time       `json:"time"`
	Caller     Caller          `json:"caller"`
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
	// Prev is the SHA-256 (hex) of the trail's line before this one, ""
	// for the first; Log sets it.
	Prev string `json:"prev,omitempty"`
}

// Caller is who called, as far as the host knows.
type Caller struct {
	Kind    string `json:"kind"`
	ID      string `json:"id,omitempty"`
	Subject string `json:"subject,omitempty"`
	Client  string `json:"client,omitempty"`
	// Auth is how a gateway's caller authenticated: "static-token" for
	// the gateway's own token, "oauth" for an issuer's access token.
	Auth string `json:"auth,omitempty"`
}

// Log appends records to a directory's current file as one hash
// chain: each line ends with the SHA-256 of the line before it ("prev"),
// across rotated files, and the latest hash is kept outside the trail too
// (StateFile), so that a changed line, cut lines or a dropped file show
// (Verify). Every append takes the trail's file lock around reading
// the latest hash, appending and recording the new one, so that parallel
// calls and other processes keep one chain; one write per line, O_APPEND.
//
// Close does not end the log for a call still in flight: an instance
// replaced by a reload closes its log while calls it saw begin may still
// finish, and each such line is appended by opening the trail for it.
type Log struct {
	dir     string
	maxSize int64
	keep    int

	mu sync.Mutex // one append at a time in this process; the file lock orders processes
	// lock is the trail's lock file, kept open; nil once closed.
	lock *fsutil.HeldLock
	f    *os.File // the current file, nil when closed
	fi   os.FileInfo
	// sf is the state file, kept open: it is written in place, so the
	// file stays the same unless someone removes it.
	sf  *os.File
	sfi os.FileInfo
	// end is f's size after this log's last append: while the file is
	// still that size, nobody else appended and state is the latest.
	end    int64
	state  auditState
	closed bool
}

// Open opens (creating) the audit trail in dir.
func Open(dir string, maxSize int64, keep int) (*Log, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	if keep <= 0 {
		keep = DefaultKeep
	}
	if err := fsutil.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit directory: %w", err)
	}
	lock, err := fsutil.OpenLock(filepath.Join(dir, auditLock))
	if err != nil {
		return nil, fmt.Errorf("lock the audit trail: %w", err)
	}
	if err := lock.Lock(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("lock the audit trail: %w", err)
	}
	defer lock.Unlock()
	l := &Log{dir: dir, maxSize: maxSize, keep: keep, end: -1, lock: lock}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.openCurrent(); err != nil {
		lock.Close()
		return nil, err
	}
	// A new trail, or one from before the chain, gets its state now: a
	// check before the first line finds a trail that holds.
	if _, found, err := readAuditState(dir); err == nil && !found {
		st, err := stateFromTrail(dir)
		if err == nil {
			err = saveAuditState(dir, &st)
		}
		if err != nil {
			l.f.Close()
			lock.Close()
			return nil, err
		}
	}
	return l, nil
}

// openCurrent (re)opens the current file unless f is it: another
// process may have rotated it.
func (l *Log) openCurrent() error {
	cur := filepath.Join(l.dir, File)
	if l.f != nil {
		if st, err := os.Stat(cur); err == nil && os.SameFile(st, l.fi) {
			return nil
		}
		l.f.Close()
		l.f = nil
	}
	f, err := os.OpenFile(cur, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the audit trail: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open the audit trail: %w", err)
	}
	l.f, l.fi, l.end = f, fi, -1
	return nil
}

// Close closes the trail's files. A line written after Close is still
// appended (see Log).
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	err := l.closeFiles()
	if l.lock != nil {
		if cerr := l.lock.Close(); err == nil {
			err = cerr
		}
		l.lock = nil
	}
	return err
}

// closeFiles closes the current file and the state file.
func (l *Log) closeFiles() error {
	var err error
	for _, f := range []**os.File{&l.f, &l.sf} {
		if *f != nil {
			if cerr := (*f).Close(); err == nil {
				err = cerr
			}
			*f = nil
		}
	}
	return err
}

// takeLock takes the trail's file lock: with the lock file kept open, or,
// once closed, opening it for this line.
func (l *Log) takeLock() (unlock func() error, err error) {
	if l.lock == nil {
		unlock, err = fsutil.Lock(filepath.Join(l.dir, auditLock))
	} else if err = l.lock.Lock(); err == nil {
		unlock = l.lock.Unlock
	}
	if err != nil {
		return nil, fmt.Errorf("lock the audit trail: %w", err)
	}
	return unlock, nil
}

// openState (re)opens the state file unless sf is it.
func (l *Log) openState() error {
	path := filepath.Join(l.dir, StateFile)
	if l.sf != nil {
		if st, err := os.Stat(path); err == nil && os.SameFile(st, l.sfi) {
			return nil
		}
		l.sf.Close()
		l.sf = nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the audit trail's state: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open the audit trail's state: %w", err)
	}
	l.sf, l.sfi = f, fi
	return nil
}

// Write appends rec as one line, chained to the line before it; rec.Prev
// is set by the log, whatever it held.
func (l *Log) Write(rec *Record) error {
	r := *rec
	r.Prev = ""
	body, err := json.Marshal(&r)
	if err != nil {
		return err
	}
	return l.append(body)
}

// append writes body (one JSON object) with the chain's prev added.
func (l *Log) append(body []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	unlock, err := l.takeLock()
	if err != nil {
		return err
	}
	defer unlock()
	if l.closed {
		defer l.closeFiles()
	}
	if err := l.openCurrent(); err != nil {
		return err
	}
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("write the audit trail: %w", err)
	}
	if st.Size() != l.end {
		// Another writer appended (or the file changed under us): the
		// latest hash is the state's, not the one this log remembers.
		if l.state, err = loadAuditState(l.dir); err != nil {
			return err
		}
		if err := l.openState(); err != nil {
			return err
		}
	}
	line := chainLine(body, l.state.Hash)
	if _, err := l.f.Write(line); err != nil {
		l.end = -1
		return fmt.Errorf("write the audit trail: %w", err)
	}
	l.end = st.Size() + int64(len(line))
	l.state.Hash = lineHash(line[:len(line)-1])
	if l.state.Oldest == "" {
		l.state.Oldest = File
	}
	var rotateErr error
	if l.end >= l.maxSize {
		rotateErr = l.rotate()
	}
	// The line is in the trail: its hash goes to the state whatever the
	// rotation did, or the next writer would chain from the line before.
	if err := writeStateSlot(l.sf, &l.state); err != nil {
		return err
	}
	return rotateErr
}

// rotate renames the full current file aside, removes the oldest rotated
// files beyond keep, and moves the chain's start (state.Oldest) with
// them. The caller holds the file lock.
func (l *Log) rotate() error {
	name := rotatedPrefix + time.Now().UTC().Format("20060102T150405.000000000Z") + rotatedSuffix
	if err := os.Rename(filepath.Join(l.dir, File), filepath.Join(l.dir, name)); err != nil {
		return fmt.Errorf("rotate the audit trail: %w", err)
	}
	l.f.Close()
	l.f = nil
	if l.state.Oldest == File {
		l.state.Oldest = name
	}
	old, err := rotatedFiles(l.dir)
	if err != nil || len(old) <= l.keep {
		return nil
	}
	for _, path := range old[:len(old)-l.keep] {
		os.Remove(path)
	}
	first := old[len(old)-l.keep]
	l.state.Oldest = filepath.Base(first)
	l.state.OldestPrev = firstPrev(first)
	return nil
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

// Files lists the trail's files in dir, oldest first, the current
// one last (when it exists).
func Files(dir string) ([]string, error) {
	out, err := rotatedFiles(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, File)); err == nil {
		out = append(out, filepath.Join(dir, File))
	}
	return out, nil
}
