package pkgstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mutable are the package-level vars that are written after init, by the
// directory of their package and name, each with why it must stay
// process-wide. Everything else may be declared at package level (a
// read-only table, a sentinel) but never written outside init.
// elsewhere marks state written only in files of other platforms, which
// the listing of this one does not type-check.
var mutable = []struct {
	dir, name, reason string
	elsewhere         bool
}{
	{"host", "pluginsMu", "the plugin registry, filled by plugin packages' init through host.Register", false},
	{"host", "plugins", "the plugin registry, filled by plugin packages' init through host.Register", false},
	{"host", "byName", "the plugin registry, filled by plugin packages' init through host.Register", false},
	{"internal/yamlfield", "structs", "a process-wide cache of what a Go type's YAML keys are, which never change while the process runs", false},
	{"internal/fsutil", "inProcess", "the locks of this process by path, where the platform has no flock: a lock is process-wide by nature", true},
	{"internal/testkit/mcptest", "fixture", "the test kit's fixture server, built once per test process", false},
	{"internal/sandbox", "goEnvCache", "a process-wide cache of `go env` answers by toolchain and environment, which do not change while the process runs", false},
	{"internal/sandbox", "hooked", "set once by Main, the hook every binary calls first: whether this process honours it is process-wide by nature", false},
	{"internal/version", "info", "a process-wide cache of the build's identity, read once", false},
	{"internal/version", "once", "guards info, read once", false},
	{"plugins/mcpclient/stdio", "warned", "the sandbox warnings this process has logged, so that each is logged once per process (what a kernel lacks is process-wide)", false},
}

// TestNoWritesToPackageState type-checks every package of the module and
// fails on each write to a package-level variable outside an init
// function: an assignment (also to a field or an element), an increment,
// taking its address, or calling a pointer method on it (mu.Lock(),
// once.Do(), m.Store(): the implicit address-of), unless mutable names it
// with a reason. A read-only table may stay at package level; a knob may
// not, because whoever sets it changes every other host, test and caller
// of the process unseen.
func TestNoWritesToPackageState(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole module")
	}
	root, module := moduleRoot(t)
	pkgs := listPackages(t, root)
	exports := map[string]string{}
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(f)
	})
	used := make([]bool, len(mutable))
	checked := 0
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path != module || p.Standard {
			continue
		}
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{
			Uses:       map[*ast.Ident]types.Object{},
			Defs:       map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{},
			Types:      map[ast.Expr]types.TypeAndValue{},
		}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		checked++
		for _, w := range writes(files, info) {
			obj := w.v
			owner, _ := filepath.Rel(root, filepath.Dir(fset.Position(obj.Pos()).Filename))
			if k := mutableAt(filepath.ToSlash(owner), obj.Name()); k >= 0 {
				used[k] = true
				continue
			}
			pos := fset.Position(w.at)
			file, _ := filepath.Rel(root, pos.Filename)
			t.Errorf("%s:%d: %s package-level var %s.%s outside init: make it a field of the value that uses it, "+
				"or an option (process-wide state that must stay goes on the list in internal/pkgstate, with its reason)",
				filepath.ToSlash(file), pos.Line, w.how, obj.Pkg().Name(), obj.Name())
		}
	}
	if checked < 40 {
		t.Fatalf("only %d packages of %s type-checked: the listing is not seeing the module", checked, module)
	}
	for k, e := range mutable {
		if !used[k] && !e.elsewhere {
			t.Errorf("%s: var %s is on the list but no longer written: remove its entry", e.dir, e.name)
		}
	}
}

// write is one write to a package-level variable.
type write struct {
	v   *types.Var
	at  token.Pos
	how string
}

// writes finds the writes to package-level variables in files, outside
// the bodies of init functions.
func writes(files []*ast.File, info *types.Info) []write {
	var out []write
	note := func(e ast.Expr, at token.Pos, how string) {
		if v := packageVar(rootOf(e, info), info); v != nil {
			out = append(out, write{v, at, how})
		}
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				continue
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					if n.Tok == token.DEFINE {
						return true
					}
					for _, lhs := range n.Lhs {
						note(lhs, lhs.Pos(), "assigns to")
					}
				case *ast.IncDecStmt:
					note(n.X, n.Pos(), "increments")
				case *ast.UnaryExpr:
					if n.Op == token.AND {
						note(n.X, n.Pos(), "takes the address of")
					}
				case *ast.RangeStmt:
					if n.Tok == token.ASSIGN {
						if n.Key != nil {
							note(n.Key, n.Key.Pos(), "assigns to")
						}
						if n.Value != nil {
							note(n.Value, n.Value.Pos(), "assigns to")
						}
					}
				case *ast.CallExpr:
					if recv, ok := implicitAddress(n, info); ok {
						note(recv, n.Pos(), "calls a pointer method on")
					}
				}
				return true
			})
		}
	}
	return out
}

// implicitAddress reports the receiver of a call to a pointer method on
// an addressable value (x.M() meaning (&x).M()).
func implicitAddress(call *ast.CallExpr, info *types.Info) (ast.Expr, bool) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.MethodVal {
		return nil, false
	}
	sig, ok := s.Obj().Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return nil, false
	}
	if _, ptrRecv := sig.Recv().Type().Underlying().(*types.Pointer); !ptrRecv {
		return nil, false
	}
	if _, ptrOperand := info.Types[sel.X].Type.Underlying().(*types.Pointer); ptrOperand {
		return nil, false // the operand is a pointer already: nothing of the var is addressed
	}
	if _, isIface := info.Types[sel.X].Type.Underlying().(*types.Interface); isIface {
		return nil, false
	}
	return sel.X, true
}

// rootOf strips fields, elements, slices, dereferences and parentheses
// off e down to the identifier (or package-qualified identifier) it writes
// into: p.f = v and *p = v on a package-level pointer p write state only
// p reaches, so they count as writes to p.
func rootOf(e ast.Expr, info *types.Info) ast.Expr {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.SliceExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.SelectorExpr:
			if _, ok := info.Selections[x]; ok {
				e = x.X
				continue
			}
			return x.Sel // a package-qualified name: pkg.Var
		case *ast.Ident:
			return x
		default:
			return nil
		}
	}
}

// packageVar returns the package-level variable e names, if it does.
func packageVar(e ast.Expr, info *types.Info) *types.Var {
	id, ok := e.(*ast.Ident)
	if !ok {
		return nil
	}
	obj := info.Uses[id]
	if obj == nil {
		obj = info.Defs[id]
	}
	v, ok := obj.(*types.Var)
	if !ok || v.IsField() || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return nil
	}
	return v
}

func mutableAt(dir, name string) int {
	for k, e := range mutable {
		if e.name == name && dir == e.dir {
			return k
		}
	}
	return -1
}

// listedPackage is what `go list -json` says of one package.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	Standard   bool
	Module     *struct{ Path string }
}

// listPackages lists the module's packages and their dependencies with
// their compiled export data, which the type checker imports.
func listPackages(t *testing.T, root string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Standard,Module,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p.Dir, string(filepath.Separator)+"testdata"+string(filepath.Separator)) {
			continue
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
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

// TestWritesFound checks the checker on a package with one write of each
// kind and the reads and declarations it must leave alone.
func TestWritesFound(t *testing.T) {
	const src = `package p

type mu struct{ n int }

func (m *mu) Lock()      { m.n++ }
func (m mu) Peek() int   { return m.n }

var (
	table   = map[string]int{"a": 1}
	list    = []int{1, 2}
	counter int
	lock    mu
	ptr     = &mu{}
	ro      = [2]string{"x", "y"}
)

func init() { counter = 1; table["b"] = 2 }

func reads() int { local := table["a"]; local++; return local + list[0] + lock.Peek() + len(ro) + ptr.n }

func w1() { counter = 2 }
func w2() { counter++ }
func w3() { table["c"] = 3 }
func w4() { list[0] = 9 }
func w5() { lock.Lock() }
func w6() *int { return &counter }
func w7() { ptr.n = 1 }
func w8() { for counter = range 3 {} }
var w9 = func() { lock.n += 1 }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{
		Uses:       map[*ast.Ident]types.Object{},
		Defs:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
		Types:      map[ast.Expr]types.TypeAndValue{},
	}
	if _, err := (&types.Config{}).Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range writes([]*ast.File{f}, info) {
		got = append(got, fmt.Sprintf("%d %s %s", fset.Position(w.at).Line, w.how, w.v.Name()))
	}
	want := []string{
		"21 assigns to counter",
		"22 increments counter",
		"23 assigns to table",
		"24 assigns to list",
		"25 calls a pointer method on lock",
		"26 takes the address of counter",
		"27 assigns to ptr",
		"28 assigns to counter",
		"29 assigns to lock",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("writes found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
