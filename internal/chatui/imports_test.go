package chatui

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFrontEndsStandOnApp reads chatui's and console's imports: they ask
// a host through app.App, so that they work the same on a host in this
// process and attached to a running one. An import of a plugin package,
// or a *host.Host taken, would tie them to one of the two.
func TestFrontEndsStandOnApp(t *testing.T) {
	const module = "github.com/dsh-host/dsh-host/"
	var files []string
	for _, dir := range []string{".", "../console"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	fset := token.NewFileSet()
	read := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		read++
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rel, ours := strings.CutPrefix(path, module); ours && (strings.HasPrefix(rel, "plugins/") || rel == "gateway") {
				t.Errorf("%s imports %s: a front end asks through app.App", fset.Position(imp.Pos()), path)
			}
		}
		if strings.Contains(string(src), "*host.Host") {
			t.Errorf("%s takes a *host.Host: a front end takes an app.App (app.Local on a host in this process)", file)
		}
	}
	if read < 10 {
		t.Fatalf("only %d files read: the test does not see the packages", read)
	}
}
