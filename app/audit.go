package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"time"

	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// AuditQuery selects calls of the policy's trail.
type AuditQuery struct {
	// Dir is the trail's directory (the policy's audit.dir); empty: the
	// host's (Local.AuditDir, else $DSH_HOME/audit).
	Dir string `json:"dir,omitempty"`
	// Tool keeps the calls of tools matching the glob; Since those from
	// then on.
	Tool  string    `json:"tool,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// Follow goes on with the calls as they are written, until ctx ends.
	Follow bool `json:"follow,omitempty"`
}

// AuditRecord is one call of the trail: its line as written, and read.
type AuditRecord struct {
	Line   json.RawMessage `json:"line"`
	Record audit.Record    `json:"-"`
}

// auditPoll is how often a followed trail is looked at for new lines.
const auditPoll = 200 * time.Millisecond

// Audit yields the trail's calls that q selects, oldest first; with
// q.Follow, then the calls as they are written, until ctx ends. A line
// that does not read as a record (one being written by an older version)
// is skipped. The trail is read as its files are, however far behind the
// reader is: nothing waits on it.
func (l *Local) Audit(ctx context.Context, q AuditQuery) (iter.Seq2[AuditRecord, error], error) {
	dir := q.Dir
	if dir == "" {
		dir = l.AuditDir
	}
	if dir == "" {
		dir = dshhome.Default("audit")
	}
	if dir == "" {
		return nil, errors.New("no audit directory, and $DSH_HOME cannot be resolved")
	}
	files, err := audit.Files(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	current := filepath.Join(dir, audit.File)
	return func(yield func(AuditRecord, error) bool) {
		stopped := false
		show := func(line []byte) bool {
			var r audit.Record
			if json.Unmarshal(line, &r) != nil {
				return true
			}
			if q.Tool != "" && !tools.Match(q.Tool, r.Tool) || r.Time.Before(q.Since) {
				return true
			}
			if !yield(AuditRecord{Line: bytes.Clone(bytes.TrimRight(line, "\n")), Record: r}, nil) {
				stopped = true
			}
			return !stopped
		}
		for _, name := range files {
			if q.Follow && name == current {
				break // followed below, from its start
			}
			if err := eachLine(name, show); err != nil {
				yield(AuditRecord{}, err)
				return
			}
			if stopped {
				return
			}
		}
		if q.Follow {
			if err := followTrail(ctx, current, show); err != nil && !stopped {
				yield(AuditRecord{}, err)
			}
		}
	}, nil
}

// auditLineMax bounds one line of the trail as it is read, so that a file
// that is not a trail (one endless line) cannot grow the reader's memory.
const auditLineMax = 4 << 20

// eachLine calls fn with each whole line of the file name, until fn says
// to stop.
func eachLine(name string, fn func([]byte) bool) error {
	f, err := os.Open(name)
	if os.IsNotExist(err) {
		return nil // rotated away meanwhile
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, auditLineMax)
	for sc.Scan() {
		if !fn(sc.Bytes()) {
			return nil
		}
	}
	return sc.Err()
}

// followTrail calls fn with the current file's lines and then those
// appended, following it across rotations, until ctx is done or fn says
// to stop.
func followTrail(ctx context.Context, current string, fn func([]byte) bool) error {
	var f *os.File
	var pending []byte
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	errStop := errors.New("stop")
	drain := func() error {
		for {
			n, err := f.Read(buf)
			pending = append(pending, buf[:n]...)
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				if !fn(pending[:i]) {
					return errStop
				}
				pending = pending[i+1:]
			}
			if len(pending) > auditLineMax {
				return fmt.Errorf("%s: a line longer than %d MiB: not a trail this host wrote", current, auditLineMax>>20)
			}
			if err == io.EOF || n == 0 {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	tick := time.NewTicker(auditPoll)
	defer tick.Stop()
	for {
		if f == nil {
			var err error
			if f, err = os.Open(current); err != nil && !os.IsNotExist(err) {
				return err
			}
			pending = nil
		}
		if f != nil {
			if err := drain(); err != nil {
				if err == errStop {
					return nil
				}
				return err
			}
			// Rotated: the rest of the old file was drained; go on with
			// the new one.
			if now, err := os.Stat(current); err == nil {
				if mine, err := f.Stat(); err == nil && !os.SameFile(now, mine) {
					if err := drain(); err != nil {
						if err == errStop {
							return nil
						}
						return err
					}
					f.Close()
					f = nil
					continue
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
