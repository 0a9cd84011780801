package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/services/tools"
)

// Workspace is the tools' state: the directory, held open.
type Workspace struct {
	cfg    Config
	dir    string
	root   *os.Root
	logger *slog.Logger
	// environ is the host's environment run's commands start from
	// (Scope.Environ; os.Environ for a Workspace made by Open alone),
	// before childenv keeps what they may see of it.
	environ func() []string
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Bounds of what one call reads or returns.
const (
	maxEntries   = 1000      // list
	maxReadBytes = 256 << 10 // read: of the file's text returned
	maxLineRunes = 2000      // read, search: a longer line is cut
	maxFileBytes = 10 << 20  // read, edit: a larger file is refused
	binarySniff  = 8000      // bytes looked at for a NUL
)

type listIn struct {
	Path string `json:"path,omitempty" jsonschema:"the directory, relative to the working directory (default: the working directory itself)"`
}

type readIn struct {
	Path   string `json:"path" jsonschema:"the file, relative to the working directory"`
	Offset int    `json:"offset,omitempty" jsonschema:"the first line to read, counting from 1 (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to read (default 2000)"`
}

type writeIn struct {
	Path    string `json:"path" jsonschema:"the file, relative to the working directory; missing directories are made"`
	Content string `json:"content" jsonschema:"the file's whole new content"`
}

type editIn struct {
	Path       string `json:"path" jsonschema:"the file, relative to the working directory"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace; it must occur once in the file (unless replace_all)"`
	NewString  string `json:"new_string" jsonschema:"the text that replaces it"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
}

// Definitions are the workspace's tools.
func (w *Workspace) Definitions() []tools.Definition {
	list := tools.Func("list", "List a directory of the working directory: one entry a line, directories ending in /, files with their size.", w.list)
	read := tools.Func("read", "Read a text file of the working directory, each line numbered; offset and limit read part of a long file.", w.read)
	search := tools.Func("search", "Search the working directory's text files for a regular expression (RE2, as ripgrep's): path:line: text, .git and binary files skipped.", w.search)
	for _, d := range []*tools.Definition{&list, &read, &search} {
		d.Annotations = tools.ReadOnly()
	}
	edit := tools.Func("edit", "Replace an exact string in a file of the working directory; it must occur exactly once unless replace_all. Answers with the diff.", w.edit)
	write := tools.Func("write", "Write a file of the working directory (created, or replaced whole).", w.write)
	edit.Preview, write.Preview = w.previewEdit, w.previewWrite
	run := tools.Func("run", "Run a shell command (sh -c) in the working directory, in a sandbox: it may write only the working directory, and reach no network unless allowed. Answers with its exit status and output (cut past a limit).", w.run)
	return []tools.Definition{list, read, search, edit, write, run}
}

func (w *Workspace) list(_ context.Context, in listIn) (any, error) {
	rel, err := w.rel(in.Path)
	if err != nil {
		return nil, err
	}
	f, err := w.openRead(rel)
	if err != nil {
		return nil, escape(in.Path, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(maxEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	more := len(entries) > maxEntries
	entries = entries[:min(len(entries), maxEntries)]
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	for _, e := range entries {
		switch {
		case e.IsDir():
			fmt.Fprintf(&b, "%s/\n", e.Name())
		case e.Type()&fs.ModeSymlink != 0:
			fmt.Fprintf(&b, "%s@\n", e.Name())
		default:
			size := int64(0)
			if info, err := e.Info(); err == nil {
				size = info.Size()
			}
			fmt.Fprintf(&b, "%s\t%d\n", e.Name(), size)
		}
	}
	if more {
		fmt.Fprintf(&b, "(only the first %d entries)\n", maxEntries)
	}
	if b.Len() == 0 {
		return "(empty directory)", nil
	}
	return b.String(), nil
}

// readText reads a regular text file of the directory (rel), refusing
// binary and oversized ones. The open follows symlinks only inside it.
func (w *Workspace) readText(p, rel string) ([]byte, fs.FileMode, error) {
	f, err := w.openRead(rel)
	if err != nil {
		return nil, 0, escape(p, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", p)
	}
	if info.Size() > maxFileBytes {
		return nil, 0, fmt.Errorf("%s is %d bytes, larger than the %d this tool reads", p, info.Size(), maxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, 0, err
	}
	if binary(data) {
		return nil, 0, fmt.Errorf("%s is a binary file", p)
	}
	return data, info.Mode().Perm(), nil
}

// openRead opens rel for reading without blocking: a FIFO (which a
// repository may hold, or a hostile one swap in) would otherwise hang the
// open until a writer comes; the caller then refuses what is not a
// regular file.
func (w *Workspace) openRead(rel string) (*os.File, error) {
	return w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

func (w *Workspace) read(_ context.Context, in readIn) (any, error) {
	rel, err := w.rel(in.Path)
	if err != nil {
		return nil, err
	}
	data, _, err := w.readText(in.Path, rel)
	if err != nil {
		return nil, err
	}
	offset, limit := max(in.Offset, 1), in.Limit
	if limit <= 0 {
		limit = 2000
	}
	lines := strings.SplitAfter(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if len(lines) == 0 {
		return "(empty file)", nil
	}
	if offset > len(lines) {
		return nil, fmt.Errorf("offset %d is past the file's %d lines", offset, len(lines))
	}
	var b strings.Builder
	// offset-1 < len(lines) here: compared so, a model's huge limit
	// cannot overflow the sum.
	end := len(lines)
	if limit < end-(offset-1) {
		end = offset - 1 + limit
	}
	for i := offset - 1; i < end; i++ {
		if b.Len() > maxReadBytes {
			fmt.Fprintf(&b, "(cut at %d bytes: read on with offset %d)\n", maxReadBytes, i+1)
			return b.String(), nil
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, cutLine(strings.TrimRight(lines[i], "\r\n")))
	}
	if end < len(lines) {
		fmt.Fprintf(&b, "(%d more lines: read on with offset %d)\n", len(lines)-end, end+1)
	}
	return b.String(), nil
}

func cutLine(s string) string {
	if utf8.RuneCountInString(s) <= maxLineRunes {
		return s
	}
	return string([]rune(s)[:maxLineRunes]) + "…"
}

// save replaces rel's content at once: a temporary file beside it,
// renamed over it, so a reader never sees half a file. A symlink is
// refused rather than replaced by a file.
func (w *Workspace) save(p, rel string, data []byte, perm fs.FileMode) error {
	if info, err := w.root.Lstat(rel); err == nil {
		if info.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: write its target instead", p)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return escape(p, err)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return escape(p, err)
		}
	}
	f, tmp, err := w.createTemp(rel, perm)
	if err != nil {
		return escape(p, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(tmp, rel)
	}
	if err != nil {
		_ = w.root.Remove(tmp)
		return escape(p, err)
	}
	return nil
}

// createTemp creates a new file beside rel, named after it with a random
// suffix as os.CreateTemp names its files: a name left by a host killed
// mid-write, or made by the model, is passed over rather than blocking
// every later write (O_EXCL also refuses to follow a symlink put there).
func (w *Workspace) createTemp(rel string, perm fs.FileMode) (*os.File, string, error) {
	for range 100 {
		tmp := path.Join(path.Dir(rel), fmt.Sprintf(".%s.dsh-tmp-%08x", path.Base(rel), rand.Uint32()))
		f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, tmp, err
	}
	return nil, "", fmt.Errorf("no free temporary name beside %s", rel)
}

func (w *Workspace) write(_ context.Context, in writeIn) (any, error) {
	rel, err := w.rel(in.Path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, fmt.Errorf("write needs a file's path")
	}
	perm := fs.FileMode(0o644)
	if info, err := w.root.Stat(rel); err == nil {
		perm = info.Mode().Perm()
	}
	if err := w.save(in.Path, rel, []byte(in.Content), perm); err != nil {
		return nil, err
	}
	return fmt.Sprintf("wrote %s (%d bytes)", in.Path, len(in.Content)), nil
}

func (w *Workspace) edit(_ context.Context, in editIn) (any, error) {
	rel, err := w.rel(in.Path)
	if err != nil {
		return nil, err
	}
	data, perm, err := w.readText(in.Path, rel)
	if err != nil {
		return nil, err
	}
	text := string(data)
	next, err := in.apply(text)
	if err != nil {
		return nil, err
	}
	if err := w.save(in.Path, rel, []byte(next), perm); err != nil {
		return nil, err
	}
	return Diff(in.Path, text, next), nil
}

// apply is the text the edit makes of text, or why it cannot: one place
// for the edit and the preview a person approves, so the two never differ.
func (in editIn) apply(text string) (string, error) {
	if in.OldString == "" {
		return "", fmt.Errorf("old_string is empty: to create a file, use write")
	}
	if in.OldString == in.NewString {
		return "", fmt.Errorf("old_string and new_string are the same: nothing to change")
	}
	switch n := strings.Count(text, in.OldString); {
	case n == 0:
		return "", fmt.Errorf("old_string does not occur in %s (it must match exactly, whitespace too)", in.Path)
	case n > 1 && !in.ReplaceAll:
		return "", fmt.Errorf("old_string occurs %d times in %s: give more context to make it unique, or set replace_all", n, in.Path)
	case int64(len(text))+int64(n)*(int64(len(in.NewString))-int64(len(in.OldString))) > maxFileBytes:
		// Counted before building it: a short string replaced by a long
		// one across a large file would otherwise take gigabytes.
		return "", fmt.Errorf("the edit would make %s larger than the %d bytes these tools read", in.Path, maxFileBytes)
	}
	if in.ReplaceAll {
		return strings.ReplaceAll(text, in.OldString, in.NewString), nil
	}
	return strings.Replace(text, in.OldString, in.NewString, 1), nil
}
