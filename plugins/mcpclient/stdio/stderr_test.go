package stdio

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

func TestLineLogger(t *testing.T) {
	logs := &mcptest.Logs{}
	l := &lineLogger{logger: slog.New(logs)}
	for _, chunk := range []string{"one\ntw", "o\r\n", "\n", strings.Repeat("x", maxStderrLine+5), "\nlast"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	l.flush()
	var got []string
	for _, r := range logs.Find(slog.LevelInfo, "server stderr") {
		got = append(got, strings.TrimPrefix(r.Attrs, "line="))
	}
	want := []string{"one", "two", strings.Repeat("x", maxStderrLine), "xxxxx", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %d %q..., want %d", len(got), got[:min(2, len(got))], len(want))
	}
}

// nodeMissingModule is what node 20 writes to stderr when the script it
// is given does not exist: the line that says so is followed by more
// lines than a failed start quotes.
const nodeMissingModule = `node:internal/modules/cjs/loader:1210
  throw err;
  ^

Error: Cannot find module '/srv/mcp/build/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)
    at Module._load (node:internal/modules/cjs/loader:1038:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
`

// TestLineLoggerKeepsTheErrorLine: the quoted tail keeps the line that
// names the error even when it scrolled out of the last lines (node's
// "Cannot find module", followed by its stack), and quotes it once when
// it is among them (a Python traceback ends with it).
func TestLineLoggerKeepsTheErrorLine(t *testing.T) {
	tests := []struct {
		name, stderr string
		want         []string
	}{
		{"node, missing script", nodeMissingModule, []string{
			"Error: Cannot find module '/srv/mcp/build/index.js'",
			"  code: 'MODULE_NOT_FOUND',", "  requireStack: []", "}", "Node.js v20.20.2",
		}},
		{"node ESM, missing package", "node:internal/modules/esm/resolve:854\n  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);\n        ^\n\n" +
			"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /srv/mcp/index.js\n    at packageResolve (node:internal/modules/esm/resolve:854:9)\n" +
			"    at moduleResolve (node:internal/modules/esm/resolve:927:18)\n    at defaultResolve (node:internal/modules/esm/resolve:1169:11)\n" +
			"    at ModuleLoader.defaultResolve (node:internal/modules/esm/loader:542:12) {\n  code: 'ERR_MODULE_NOT_FOUND'\n}\n\nNode.js v20.20.2\n",
			[]string{
				"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /srv/mcp/index.js",
				"    at ModuleLoader.defaultResolve (node:internal/modules/esm/loader:542:12) {",
				"  code: 'ERR_MODULE_NOT_FOUND'", "}", "Node.js v20.20.2",
			}},
		{"python, error last", "Traceback (most recent call last):\n  File \"/srv/server.py\", line 1, in <module>\n    import mcp\nModuleNotFoundError: No module named 'mcp'\n",
			[]string{"Traceback (most recent call last):", "  File \"/srv/server.py\", line 1, in <module>", "    import mcp", "ModuleNotFoundError: No module named 'mcp'"}},
		{"no error line", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n", []string{"three", "four", "five", "six", "seven"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &lineLogger{logger: slog.New(&mcptest.Logs{})}
			if _, err := l.Write([]byte(tt.stderr)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, l.last()); diff != "" {
				t.Errorf("last lines (-want +got):\n%s", diff)
			}
		})
	}
}
