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
	fs := flagSet("import", "<file|-> [--write [-c FILE | --dir DIR]]", `
Import reads an MCP client's server list and prints the equivalent composition
entries (YAML) on stdout. It understands the mcpServers object of Claude
Code's .mcp.json, claude_desktop_config.json, Cursor's mcp.json and Gemini
CLI's settings.json (command, args, env, cwd; or url, httpUrl, headers, type),
the servers object of VS Code's .vscode/mcp.json (and of the "mcp" key of its
settings.json), the mcp object of opencode.json, and the [mcp_servers.NAME]
tables of Codex's config.toml. ${env:VAR}, ${input:NAME} and {env:VAR} become
${VAR} and ${NAME}, and so does Gemini CLI's $VAR as a word of an env value or
header ("Bearer $TOKEN"), a whole argument, or a part of the url. Legacy SSE servers ("type": "sse", or a url ending
in /sse) get transport: sse. Inline secrets (env values and headers whose
names say KEY, TOKEN, SECRET, PASS, AUTH..., values that are URLs with
credentials or connection strings with a password, and the password, user
or secret query parameters of a server's url) are written as ${VAR}
references, and the variables to export are printed on stderr.

With --write the entries are appended to the composition named by -c, keeping
its comments. With --write --dir DIR each server goes to a file of its own,
DIR/<id>.yml, holding a plugins list of one entry: list DIR/*.yml under the
composition's include key. Either way an id or serverName the composition
(or DIR) already uses, or a file that exists, is refused and nothing is
written.`)
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
