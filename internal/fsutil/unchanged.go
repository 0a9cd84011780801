package fsutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Unchanged fails when path no longer holds old (existed false: when
// path exists now): someone wrote the file while a new content was made
// from old, and writing that would drop their change. while says when, in
// the error: "while connect ran (did the client write it?)". A file that
// cannot be read is an error too: what it holds cannot be known.
func Unchanged(path string, old []byte, existed bool, while string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !existed {
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w; nothing was written", err)
	}
	same := false
	if err == nil {
		defer f.Close()
		// One byte past old is enough to tell a longer file.
		var cur []byte
		cur, err = io.ReadAll(io.LimitReader(f, int64(len(old))+1))
		if err != nil {
			return fmt.Errorf("%s: %w; nothing was written", path, err)
		}
		same = existed && bytes.Equal(cur, old)
	}
	if !same {
		return fmt.Errorf("%s changed %s; nothing was written: run it again", path, while)
	}
	return nil
}
