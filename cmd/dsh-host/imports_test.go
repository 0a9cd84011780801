package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCommandOnlyParsesAndRenders reads this package's imports: it builds
// the plugins, the gateway and the services in with blank imports, and
// otherwise stands on app and the front-end packages. A named import of a
// plugin, the gateway or a service, or a call of host.DecodeConfig, is
// logic of theirs that a front end would copy. The host package itself is
// imported only by run and serve, which keep a host for the process's
// life; every other subcommand reaches one through app or hostrun.
func TestCommandOnlyParsesAndRenders(t *testing.T) {
	const module = "github.com/dsh-host/dsh-host/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rel, ours := strings.CutPrefix(path, module)
			plugin := ours && (strings.HasPrefix(rel, "plugins/") || rel == "gateway" || strings.HasPrefix(rel, "gateway/") || strings.HasPrefix(rel, "services/"))
			if plugin && (imp.Name == nil || imp.Name.Name != "_") {
				t.Errorf("%s imports %s: only a blank import may build a plugin or service in; what the command needs of it goes through app or a front-end package", fset.Position(imp.Pos()), path)
			}
			if ours && (rel == "host" || strings.HasPrefix(rel, "host/")) && file != "run.go" && file != "serve.go" {
				t.Errorf("%s imports %s: a subcommand other than run and serve reaches a host through app or internal/hostrun", fset.Position(imp.Pos()), path)
			}
		}
		if strings.Contains(string(src), "DecodeConfig") {
			t.Errorf("%s calls host.DecodeConfig: a plugin's config is the plugin's (host.Decode where a front end must read one)", file)
		}
	}
	if len(files) < 5 {
		t.Fatalf("only %d files read: the test does not see the package", len(files))
	}
}
