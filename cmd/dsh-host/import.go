package main

// `dsh-host import`: the conversion and the writing are internal/importer's;
// this file parses flags and prints.

import (
	"context"

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
	err := importer.Run(importer.Options{Source: pos[0], In: io.In, Write: *write, File: *file, Dir: *dir}, io.Out, io.Err)
	if err != nil {
		return fail(io, "import", err)
	}
	return exitOK
}
