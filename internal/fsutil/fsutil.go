// Package fsutil holds the file-system steps the durable stores share:
// atomic replacement of a file, directory fsync, and advisory locks.
package fsutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// MkdirAll creates dir and any missing parents with perm, fsyncing the
// parent of every directory it creates so that the new entries are durable.
func MkdirAll(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

// WriteFile replaces path with data atomically: it writes a temporary file
// in the same directory, fsyncs it, renames it over path and fsyncs the
// directory. Readers see the old content or the new, never a mix; after a
// crash the file holds one of them. The temporary file is removed on error.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// Rewrite is WriteFile for a file a person owns (a composition, a
// client's config): it keeps the file's mode, and a missing file is made
// with perm.
func Rewrite(path string, data []byte, perm os.FileMode) error {
	if info, err := os.Stat(path); err == nil {
		perm = info.Mode().Perm()
	}
	return WriteFile(path, data, perm)
}
