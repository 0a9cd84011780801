package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// Check is what Verify read of a trail that holds.
type Check struct {
	// Files and Lines count what the chain covers, from its oldest file.
	Files, Lines int
	// Unchained counts the lines at the trail's start written before it
	// had a chain (by an older dsh-host): they are hashed into it, but
	// nothing before them vouches for them.
	Unchained int
	// Latest is the hash of the trail's latest line.
	Latest string
}

// Break is where a trail stops holding: a line (File and Line), or a
// file as a whole (Line 0).
type Break struct {
	File string // a file's name in the trail's directory
	Line int    // from 1; 0 for the file as a whole
	Why  string
}

func (b *Break) Error() string {
	if b.Line > 0 {
		return b.File + ":" + strconv.Itoa(b.Line) + ": " + b.Why
	}
	return b.File + ": " + b.Why
}

// Verify checks the trail in dir against its chain and its state
// file: every line carries the hash of the one before it, across its
// files, from the start the state records to the latest hash it records.
// A trail that does not hold returns an *Break naming the first line,
// or the file, that does not follow.
//
// It takes the trail's lock only to read the state and open the files as
// they are at that moment (their sizes then): calls waiting to write
// their lines are not held up while it reads a large trail, and what they
// append meanwhile is left for the next check.
//
// What it cannot catch: someone who can write both the trail and its
// state file can rewrite both consistently.
func Verify(dir string) (Check, error) {
	snap, err := snapshotTrail(dir)
	defer snap.close()
	if err != nil {
		return Check{}, err
	}
	var check Check
	st := snap.state
	w := chainWalk{prev: st.OldestPrev}
	for i, f := range snap.files {
		var prevFile string
		if i > 0 {
			prevFile = snap.files[i-1].name
		}
		if err := w.file(f, prevFile); err != nil {
			return check, err
		}
		check.Files++
	}
	check.Lines, check.Unchained, check.Latest = w.lines, w.unchained, w.last
	if w.last != st.Hash {
		if w.lastFile == "" {
			return check, &Break{File: snap.files[len(snap.files)-1].name, Why: "the trail has no line, but its state file records one: its lines were removed"}
		}
		return check, &Break{File: w.lastFile, Line: w.lastLine,
			Why: "the trail ends here, but its state file records another latest line: the lines after it were cut, or this line was changed"}
	}
	return check, nil
}

// trailSnapshot is the trail as it was at one moment: its state, and its
// files from the chain's start, open, with their sizes then.
type trailSnapshot struct {
	state auditState
	files []trailFile
}

type trailFile struct {
	name string
	f    *os.File
	size int64
}

func (s *trailSnapshot) close() {
	for _, f := range s.files {
		f.f.Close()
	}
}

// snapshotTrail takes the trail's lock and reads its state and opens its
// files. An empty snapshot without error is a directory with no trail.
func snapshotTrail(dir string) (*trailSnapshot, error) {
	snap := &trailSnapshot{}
	// A directory it cannot write (a copy, another user's) is still
	// checked, without the lock.
	if unlock, err := fsutil.Lock(filepath.Join(dir, auditLock)); err == nil {
		defer unlock()
	}
	paths, err := Files(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return snap, err
	}
	st, found, err := readAuditState(dir)
	switch {
	case !found && err == nil && len(paths) == 0:
		return snap, nil // no trail yet
	case !found && err == nil:
		return snap, &Break{File: StateFile, Why: "missing: without it the trail's latest lines cannot be checked (removed, or the trail was copied without it)"}
	case found && err != nil:
		return snap, &Break{File: StateFile, Why: "holds no valid state: it was changed"}
	case err != nil:
		return snap, err
	}
	snap.state = st
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	start := slices.Index(names, st.Oldest)
	if start < 0 {
		if st.Oldest == File && len(names) == 0 && st.Hash == "" {
			return snap, nil
		}
		return snap, &Break{File: st.Oldest, Why: "missing: the state file records it as the trail's oldest file"}
	}
	for _, name := range names[start:] {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return snap, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return snap, err
		}
		snap.files = append(snap.files, trailFile{name: name, f: f, size: fi.Size()})
	}
	return snap, nil
}

// chainWalk follows the chain line by line.
type chainWalk struct {
	prev      string // the hash the next line must carry
	started   bool   // a line was read: prev is a line's hash
	chained   bool   // a line with prev was read
	lines     int
	unchained int
	last      string // the hash of the last line read
	lastFile  string
	lastLine  int
}

// file walks the lines of tf up to its size at the snapshot; prevFile is
// the file before it, "" for the oldest.
func (w *chainWalk) file(tf trailFile, prevFile string) error {
	name := tf.name
	r := bufio.NewReaderSize(io.LimitReader(tf.f, tf.size), 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		if err == io.EOF {
			return &Break{File: name, Line: n, Why: "the last line is not whole (no newline): cut, or its write did not finish"}
		}
		line = line[:len(line)-1]
		prev, perr := linePrev(line)
		switch {
		case perr != nil:
			return &Break{File: name, Line: n, Why: "not a JSON record: the line was changed"}
		case prev == nil && w.chained:
			return &Break{File: name, Line: n, Why: "has no prev hash, after lines that do: the line was changed or put in"}
		case prev == nil:
			w.unchained++
		case *prev != w.prev:
			return w.breakAt(name, n, prevFile)
		default:
			w.chained = true
		}
		w.prev = lineHash(line)
		w.started = true
		w.lines++
		w.last, w.lastFile, w.lastLine = w.prev, name, n
	}
}

// breakAt says why line n of name does not follow the line before it.
func (w *chainWalk) breakAt(name string, n int, prevFile string) error {
	switch {
	case !w.started:
		return &Break{File: name, Line: n, Why: "does not carry the hash the state file records for the trail's start: the trail's first lines were changed or removed"}
	case n == 1:
		return &Break{File: name, Line: n, Why: fmt.Sprintf("does not follow the last line of %s: a file between them is missing, or %s's last lines were cut or changed", prevFile, prevFile)}
	}
	return &Break{File: name, Line: n, Why: fmt.Sprintf("does not follow line %d: line %d or this one was changed, or lines between them removed", n-1, n-1)}
}
