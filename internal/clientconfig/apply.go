package clientconfig

// Writing a plan: the backup first, then the files; and undoing one.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// Apply writes the plan: the backup first, then the composition, then the
// client's file; when the client's file cannot be written the composition
// is put back. A file changed since Prepare read it is refused.
func (p *Plan) Apply() error {
	while := "while connect ran (did the client write it?)"
	if p.undo {
		while = "while connect --undo ran (did the client write it?)"
	}
	if err := fsutil.Unchanged(p.File, p.Old, p.Exists, while); err != nil {
		return err
	}
	if p.Comp != "" {
		if err := fsutil.Unchanged(p.Comp, p.CompOld, true, while); err != nil {
			return err
		}
	}
	// A new file of the user's own (not a project's, which is shared)
	// is private, as the clients keep theirs.
	mode, dirMode := os.FileMode(0o600), os.FileMode(0o700)
	if p.project {
		mode, dirMode = 0o644, 0o755
	}
	if info, err := os.Stat(p.File); err == nil {
		mode = info.Mode().Perm()
	}
	recFile := recordPath(p.recDir, p.rec.Client, p.File)
	if !p.undo {
		if err := p.saveRecord(recFile, mode); err != nil {
			return err
		}
	}
	if p.Comp != "" && !bytes.Equal(p.CompOld, p.CompNew) {
		if err := fsutil.Rewrite(p.Comp, p.CompNew, 0o644); err != nil {
			return err
		}
	}
	var err error
	switch {
	case p.Remove:
		err = os.Remove(p.File)
	case p.undo && !p.rec.Existed && !p.Exists:
		// connect created the file and it is gone already: undo has
		// nothing to write (an empty file is not one the client reads).
	default:
		if p.undo && !p.reversed {
			mode = os.FileMode(p.rec.Mode)
		}
		if err = fsutil.MkdirAll(filepath.Dir(p.File), dirMode); err == nil {
			err = fsutil.WriteFile(p.File, p.New, mode)
		}
	}
	if err != nil {
		if p.Comp != "" {
			_ = fsutil.Rewrite(p.Comp, p.CompOld, 0o644)
		}
		return err
	}
	if p.undo {
		return os.Remove(recFile)
	}
	return nil
}

// saveRecord writes the backup before anything else is written. The first
// connect's backup is kept, so that undo goes back to the file before
// dsh-host.
func (p *Plan) saveRecord(recFile string, mode os.FileMode) error {
	rec := p.rec
	rec.Existed, rec.Original, rec.Mode = p.Exists, p.Old, uint32(mode)
	prev, err := loadRecord(recFile)
	if err == nil {
		rec.inherit(prev, digest(p.Old))
		if prev.Comp != "" && p.Comp == "" {
			rec.Comp, rec.CompOriginal, rec.CompWritten = prev.Comp, prev.CompOriginal, prev.CompWritten
		}
	}
	rec.Written = digest(p.New)
	if p.Comp != "" {
		rec.Comp, rec.CompOriginal, rec.CompWritten = p.Comp, p.CompOld, digest(p.CompNew)
		// A second --move into the composition the first one wrote:
		// undo goes back to it before the first.
		if prev.Comp == p.Comp && prev.CompWritten == digest(p.CompOld) {
			rec.CompOriginal = prev.CompOriginal
		}
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.MkdirAll(p.recDir, 0o700); err != nil {
		return err
	}
	// 0600: a client's file may hold tokens.
	return fsutil.WriteFile(recFile, data, 0o600)
}

func loadRecord(path string) (record, error) {
	var rec record
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}
