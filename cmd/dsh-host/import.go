package main

// `dsh-host import`: the conversion and the writing are internal/importer's;
// this file parses flags and prints.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/internal/importer"
)

func cmdImport(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("import")
	file := fs.String("c", "composition.yml", "composition `file` that --write appends to, or whose ids --dir avoids")
	write := fs.Bool("write", false, "write the entries instead of printing them")
	dir := fs.String("dir", "", "with --write, write one file per server into `DIR` instead of appending to -c")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, io, "want one file to import (- for stdin)")
	}
	if *dir != "" && !*write {
		return usageError(fs, io, "--dir goes with --write")
	}
	var data []byte
	var err error
	if pos[0] == "-" {
		var b bytes.Buffer
		_, err = b.ReadFrom(io.In)
		data = b.Bytes()
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return fail(io, "import", err)
	}
	im, err := importer.Parse(data, filepath.Base(pos[0]))
	if err != nil {
		return fail(io, "import", fmt.Errorf("%s: %w", pos[0], err))
	}
	for _, n := range im.Notes {
		fmt.Fprintf(io.Err, "note: %s\n", n)
	}
	if im.Len() == 0 {
		return fail(io, "import", fmt.Errorf("%s: no server could be imported", pos[0]))
	}
	switch {
	case !*write:
		out, err := im.YAML()
		if err != nil {
			return fail(io, "import", err)
		}
		io.Out.Write(out)
	case *dir != "":
		files, err := im.WriteDir(*dir, *file)
		if err != nil {
			return fail(io, "import", err)
		}
		pattern := filepath.Join(*dir, "*.yml")
		if rel, err := filepath.Rel(filepath.Dir(*file), pattern); err == nil {
			pattern = rel // include paths are the composition's
		}
		fmt.Fprintf(io.Out, "wrote %s; list %s under include: in %s if it is not there yet, then check it with: dsh-host check -c %s\n",
			strings.Join(files, ", "), pattern, *file, *file)
	default:
		if err := im.Append(*file); err != nil {
			return fail(io, "import", err)
		}
		fmt.Fprintf(io.Out, "%s: appended %d entries (%s); check it with: dsh-host check -c %s\n", *file, im.Len(), im.IDs(), *file)
	}
	return exitOK
}
