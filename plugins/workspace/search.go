package workspace

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// Bounds of one search.
const (
	defaultMatches = 100
	maxMatches     = 1000
	maxSearchFiles = 20000
	maxSearchFile  = 2 << 20 // a larger file is skipped
)

type searchIn struct {
	Pattern    string `json:"pattern" jsonschema:"a regular expression (RE2 syntax), matched against each line"`
	Path       string `json:"path,omitempty" jsonschema:"the directory or file to search (default: the working directory)"`
	Glob       string `json:"glob,omitempty" jsonschema:"only files whose name matches this glob, such as *.go"`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"match regardless of case"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"at most this many matching lines (default 100, at most 1000)"`
}

// search walks the directory (skipping .git, binary files and files past
// maxSearchFile; never following a symlink) and answers path:line: text
// for each matching line, bounded in matches and files.
func (w *Workspace) search(ctx context.Context, in searchIn) (any, error) {
	expr := in.Pattern
	if in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr) // RE2: linear in the input, whatever the pattern
	if err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	if in.Glob != "" {
		if _, err := path.Match(in.Glob, ""); err != nil {
			return nil, fmt.Errorf("glob: %w", err)
		}
	}
	rel, err := w.rel(in.Path)
	if err != nil {
		return nil, err
	}
	limit := in.MaxResults
	if limit <= 0 {
		limit = defaultMatches
	}
	limit = min(limit, maxMatches)
	fsys := w.root.FS()
	var b strings.Builder
	matches, files := 0, 0
	cut := ""
	err = fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == rel {
				return escape(in.Path, err)
			}
			return nil // an unreadable entry is skipped, as ripgrep does
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != rel {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symlinks are not followed
		}
		if in.Glob != "" {
			if ok, _ := path.Match(in.Glob, d.Name()); !ok {
				return nil
			}
		}
		if files++; files > maxSearchFiles {
			cut = fmt.Sprintf("(stopped after %d files: narrow path or glob)\n", maxSearchFiles)
			return fs.SkipAll
		}
		f, err := w.openRead(p)
		if err != nil {
			return nil
		}
		// What was opened, not what the walk saw: a file swapped since.
		if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() || info.Size() > maxSearchFile {
			f.Close()
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(f, maxSearchFile+1))
		f.Close()
		if err != nil || binary(data) {
			return nil
		}
		for i, l := range strings.Split(string(data), "\n") {
			if !re.MatchString(l) {
				continue
			}
			if matches == limit {
				cut = fmt.Sprintf("(stopped at %d matches: raise max_results or narrow the search)\n", limit)
				return fs.SkipAll
			}
			matches++
			fmt.Fprintf(&b, "%s:%d: %s\n", p, i+1, cutLine(strings.TrimRight(l, "\r")))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if matches == 0 {
		return "no match" + strings.TrimSuffix(" "+cut, " "), nil
	}
	return b.String() + cut, nil
}
