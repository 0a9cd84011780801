package clientconfig

// Where a client's file is, and reading it.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// resolve returns the file to read and write for the path a client reads:
// a symbolic link is followed (dotfile managers link configs), so that
// the link stays a link.
func resolve(path string) (file string, exists bool, err error) {
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, false, nil
	}
	if err != nil {
		return "", false, err
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", false, fmt.Errorf("%s is a symbolic link that cannot be followed: %w", path, err)
		}
		file = target
		if info, err = os.Stat(target); err != nil {
			return "", false, err
		}
	} else {
		file = path
	}
	if !info.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is not a regular file", file)
	}
	return file, true, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err == nil && len(b) > maxFile {
		err = fmt.Errorf("%s is larger than %d MB", path, maxFile>>20)
	}
	return b, err
}

// inProject refuses a project's file that resolves outside the project:
// a project is often someone else's (a cloned repository), and a link
// there to a file of the user's (~/.docker/config.json) would have
// connect edit it, and show its lines in the diff. file is resolve's (the
// link followed) of named; its directory may be a link too, or not exist yet.
func inProject(project, named, file string) error {
	root, err := filepath.EvalSymlinks(project)
	if err != nil {
		return fmt.Errorf("the project %s: %w", project, err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	// The nearest directory that exists, links resolved, and the rest.
	dir, rest := filepath.Dir(file), filepath.Base(file)
	real, err := filepath.EvalSymlinks(dir)
	for err != nil && dir != filepath.Dir(dir) {
		dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest)
		real, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return err
	}
	if real, err = filepath.Abs(filepath.Join(real, rest)); err != nil {
		return err
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s leads outside the project %s (to %s): refused, as a project's link may point at any file of yours; connect the file itself, or remove the link", named, project, real)
	}
	return nil
}
