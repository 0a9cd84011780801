package mcpservers

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/internal/sandbox"
)

// known is what a server people run needs beyond the sandbox's defaults
// (docs/sandbox.md lists the same), by the npm package npx runs.
type known struct {
	pkg string
	// dirArgs: the arguments after the package are directories the
	// server serves, read and written.
	dirArgs bool
	// connect are the TCP ports of the APIs it calls.
	connect []uint16
	// note is said in the entry's comment.
	note string
}

// knownServers is the one table of what known servers need.
func knownServers() []known {
	https := []uint16{443}
	return []known{
		{pkg: "@modelcontextprotocol/server-filesystem", dirArgs: true},
		{pkg: "@modelcontextprotocol/server-everything"},
		{pkg: "@modelcontextprotocol/server-sequential-thinking"},
		{pkg: "@modelcontextprotocol/server-memory",
			note: "server-memory keeps its memory beside its code, in npm's cache, which the sandbox grants read-only: set env MEMORY_FILE_PATH to a file in a directory listed in sandbox.write"},
		{pkg: "@modelcontextprotocol/server-github", connect: https},
		{pkg: "@modelcontextprotocol/server-gitlab", connect: https},
		{pkg: "@modelcontextprotocol/server-slack", connect: https},
		{pkg: "@modelcontextprotocol/server-brave-search", connect: https},
		{pkg: "@modelcontextprotocol/server-google-maps", connect: https},
		{pkg: "@upstash/context7-mcp", connect: https},
		{pkg: "@notionhq/notion-mcp-server", connect: https},
		{pkg: "tavily-mcp", connect: https},
		{pkg: "exa-mcp-server", connect: https},
		{pkg: "firecrawl-mcp", connect: https},
	}
}

// grantKnown sets the sandbox grants of a known server, run with npx or
// with node from a node_modules directory (an entry that has a sandbox
// key of its own is left as it is), with a note saying what was granted.
func (imp *Imported) grantKnown() {
	cfg := &imp.Config
	if cfg.Sandbox.Set() || cfg.Sandbox.Mode != "" {
		return
	}
	var pkg string
	var rest []string
	switch filepath.Base(cfg.Command) {
	case "npx":
		if pkgs, at, ok := sandbox.NpxPackages(cfg.Args); ok {
			pkg, rest = pkgs[0], cfg.Args[min(at+1, len(cfg.Args)):]
			if v := strings.LastIndex(pkg, "@"); v > 0 {
				pkg = pkg[:v] // the version
			}
		}
	case "node":
		if len(cfg.Args) > 0 {
			pkg, rest = modulePackage(cfg.Args[0]), cfg.Args[1:]
		}
	}
	if pkg == "" {
		return
	}
	i := slices.IndexFunc(knownServers(), func(k known) bool { return k.pkg == pkg })
	if i < 0 {
		return
	}
	k := knownServers()[i]
	if k.dirArgs {
		for _, a := range rest {
			switch {
			case strings.HasPrefix(a, "-"):
			case filepath.IsAbs(a) || strings.HasPrefix(a, "~/") || strings.HasPrefix(a, "${"):
				cfg.Sandbox.Write = append(cfg.Sandbox.Write, a)
			default:
				imp.note("sandbox: %q is a relative directory, which the sandbox cannot grant: make it absolute in args and add it to sandbox.write", a)
			}
		}
		if len(cfg.Sandbox.Write) > 0 {
			imp.note("sandbox: the directories %s serves are granted to read and write (sandbox.write)", pkg)
		}
	}
	if len(k.connect) > 0 {
		cfg.Sandbox.Connect = sandbox.Ports{List: slices.Clone(k.connect)}
		imp.note("sandbox: %s calls an HTTPS API, so it may connect to port 443 (sandbox.connect)", pkg)
	}
	if k.note != "" {
		imp.note("sandbox: %s", k.note)
	}
}

// modulePackage returns the package of a script under node_modules
// (".../node_modules/@scope/pkg/dist/index.js"), or "".
func modulePackage(script string) string {
	_, after, ok := strings.Cut(filepath.ToSlash(script), "/node_modules/")
	if !ok {
		return ""
	}
	for {
		// The innermost node_modules holds the package run.
		_, inner, ok := strings.Cut(after, "/node_modules/")
		if !ok {
			break
		}
		after = inner
	}
	parts := strings.SplitN(after, "/", 3)
	if strings.HasPrefix(parts[0], "@") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}
