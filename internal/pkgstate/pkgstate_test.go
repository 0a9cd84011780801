package pkgstate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowed are the package-level vars that stay, by the directory of their
// file (or a directory below it) and name, each with why.
var allowed = []struct{ dir, name, reason string }{
	{"host", "pluginsMu", "the init-time plugin registry"},
	{"host", "plugins", "the init-time plugin registry"},
	{"host", "byName", "the init-time plugin registry"},
	{"host", "entryKeys", "a read-only table of the composition's entry keys"},
	{"host", "topKeys", "a read-only table of the composition's top-level keys"},
	{"host", "yamlUnmarshaler", "a reflect.Type, read-only"},
	{"host", "textUnmarshaler", "a reflect.Type, read-only"},
	{"internal/yamlfield", "unmarshalerType", "a reflect.Type, read-only"},
	{"internal/yamlfield", "obsoleteUnmarshalerType", "a reflect.Type, read-only"},
	{"internal/yamlfield", "structs", "a process-wide cache of what a Go type's YAML keys are, which never change while the process runs"},
	{"services/settings", "yamlMarshaler", "a reflect.Type, read-only"},
	{"services/settings", "textMarshaler", "a reflect.Type, read-only"},
	{"internal/fsutil", "inProcess", "the locks of this process by path, where the platform has no flock: a lock is process-wide by nature"},
	{"internal/testkit/mcptest", "fixture", "the test kit's fixture server, built once per test process"},
	{"internal/schemafast", "noneAllowed", "a sentinel node compared by address, never modified"},
	{"internal/schemafast", "typeNames", "a read-only table of JSON Schema type names"},
	{"internal/schemafast", "knownVersions", "a read-only table of $schema values"},
	{"internal/schemafast", "handled", "a read-only table of the keywords the checker handles"},
	{"internal/control", "errKinds", "a read-only table of sentinel errors by wire name"},
	{"services/tools", "noHooks", "the empty hook set, a sentinel never modified"},
	{"services/resources", "imageTypes", "a read-only table of media types"},
	{"plugins/mcpclient", "clientInfo", "the host's fixed introduction to servers, never modified"},
	{"plugins/mcpclient", "secretWords", "a read-only table of words that mark a secret"},
	{"plugins/mcpclient", "minimalNames", "a read-only table of environment variable names"},
	{"plugins/mcpclient", "rpcMembers", "a read-only table of JSON-RPC member names"},
	{"cmd/dsh-host", "consoleCaller", "the console's fixed caller, never modified"},
	{"cmd/dsh-host", "builtinConsoleCommands", "a read-only table of the console's own commands"},
	{"cmd/dsh-host", "serveEnv", "a read-only table of the environment variables serve's flags read"},
	{"internal/sandbox", "systemRead", "a read-only table of the system paths every sandboxed server may read"},
	{"internal/sandbox", "systemWrite", "a read-only table of the devices every sandboxed server may write"},
	{"internal/sandbox", "goEnvCache", "a process-wide cache of `go env` answers by toolchain and environment, which do not change while the process runs"},
	{"internal/sandbox", "base", "the Landlock configuration of the highest ABI used, a read-only value"},
	{"internal/sandbox", "hooked", "set once by Main, the hook every binary calls first: whether this process honours it is process-wide by nature"},
	{"internal/sandbox", "Support", "the kernel's Landlock ABI probe; only tests replace it, to simulate a kernel without Landlock (to become an option of Start)"},
	{"internal/version", "Version", "set at link time by -ldflags -X, which needs a package-level string; never assigned at run time"},
	{"internal/version", "info", "a process-wide cache of the build's identity, read once"},
	{"internal/version", "once", "guards info, read once"},
	{"plugins/mcpclient/stdio", "warned", "the sandbox warnings this process has logged, so that each is logged once per process (what a kernel lacks is process-wide)"},
	{"internal/version", "Commit", "set at link time by -ldflags -X, which needs a package-level string; never assigned at run time"},
}

// TestNoMutablePackageState fails on every package-level var that is not
// a compile-time assertion (var _ T = ...), a sentinel error
// (errors.New, fmt.Errorf), a service key (host.NewKey), a compiled
// regexp (regexp.MustCompile) or on the allowlist.
func TestNoMutablePackageState(t *testing.T) {
	root, module := moduleRoot(t)
	used := make([]bool, len(allowed))
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		imports := importNames(f)
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.Name == "_" {
						continue // a compile-time assertion
					}
					if len(vs.Values) == len(vs.Names) && fixed(vs.Values[i], imports, module) {
						continue
					}
					if k := allowedAt(dir, name.Name); k >= 0 {
						used[k] = true
						continue
					}
					pos := fset.Position(name.Pos())
					t.Errorf("%s:%d: var %s is mutable package-level state: make it a constant, a field of the value that uses it, "+
						"or an option (a read-only table or a process-wide cache that must stay goes on the allowlist in internal/pkgstate, with its reason)",
						filepath.ToSlash(rel), pos.Line, name.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d Go files found under %s: the walk is not seeing the module", files, root)
	}
	for k, e := range allowed {
		switch {
		case used[k]:
		default:
			t.Errorf("%s: var %s is on the allowlist but no longer exists: remove its entry", e.dir, e.name)
		}
	}
}

// skipDir reports whether a directory holds no code of this module:
// fixtures, caches, hidden directories, and nested modules or worktrees.
func skipDir(path, name string) bool {
	if name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") {
		return true
	}
	for _, marker := range []string{"go.mod", ".git"} {
		if _, err := os.Lstat(filepath.Join(path, marker)); err == nil {
			return true
		}
	}
	return false
}

func allowedAt(dir, name string) int {
	for k, e := range allowed {
		if e.name == name && (dir == e.dir || strings.HasPrefix(dir, e.dir+"/")) {
			return k
		}
	}
	return -1
}

// fixed reports whether v is one of the values that make no knob: a
// sentinel error, a service key or a compiled regexp.
func fixed(v ast.Expr, imports map[string]string, module string) bool {
	call, ok := v.(*ast.CallExpr)
	if !ok {
		return false
	}
	fun := call.Fun
	switch x := fun.(type) {
	case *ast.IndexExpr: // host.NewKey[T]
		fun = x.X
	case *ast.IndexListExpr:
		fun = x.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch imports[pkg.Name] + "." + sel.Sel.Name {
	case "errors.New", "fmt.Errorf", "regexp.MustCompile", module + "/host.NewKey":
		return true
	}
	return false
}

// importNames maps the names a file refers to its imports by to their
// paths.
func importNames(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = path
	}
	return out
}

// moduleRoot returns the directory of the go.mod above this package, and
// the module's path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(data)) {
				if path, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(path), `"`)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
