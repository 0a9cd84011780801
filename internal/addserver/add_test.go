package addserver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/addserver"
	"github.com/dsh-host/dsh-host/internal/registry"
	"github.com/dsh-host/dsh-host/internal/testkit/golden"
	"github.com/dsh-host/dsh-host/internal/testkit/registrytest"
	"github.com/dsh-host/dsh-host/services/policy/pins"
)

// answers answers each question with the next of its list, and records
// the questions; past the list, it has no answer.
type answers struct {
	list  []string
	asked []string
}

func (a *answers) Ask(_ context.Context, q addserver.Question) (string, error) {
	a.asked = append(a.asked, q.Label)
	if len(a.list) == 0 {
		return "", errors.New("no answer (end of input)")
	}
	v := a.list[0]
	a.list = a.list[1:]
	return v, nil
}

// compositionCopy is testdata/composition.yml in a temporary directory.
func compositionCopy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/composition.yml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func fixtureRegistry(t *testing.T, docs ...registrytest.Doc) *registry.Client {
	t.Helper()
	if docs == nil {
		docs = registrytest.Testdata(t)
	}
	c, err := registry.New(registrytest.Start(t, docs).URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// everywhere has npx and uvx, and no variable set.
func everywhere(name string) addserver.From {
	return addserver.From{Name: name, Have: func(string) bool { return true }, Env: func(string) (string, bool) { return "", false }}
}

// TestAddFromRegistry: an npm server with a secret, one with a required
// directory argument, a PyPI one at a version and a remote with a secret
// header are written into a composition whose comments and order stay;
// the file and what add said are golden (the registry's URL replaced).
func TestAddFromRegistry(t *testing.T) {
	c := fixtureRegistry(t)
	file := compositionCopy(t)
	dir := t.TempDir()
	var said strings.Builder
	for _, tc := range []struct {
		ref     string
		answers []string
		asked   []string
	}{
		{"io.github.example/github", nil, nil},
		// An empty answer is asked again; a relative directory is made absolute.
		{"io.github.modelcontextprotocol/server-filesystem", []string{"", dir}, []string{"argument <directory>", "argument <directory>"}},
		{"io.github.example/weather@1.1.0", nil, nil},
		{"io.github.example/notes", nil, nil},
	} {
		a := &answers{list: tc.answers}
		p, err := addserver.FromRegistry(t.Context(), c, tc.ref, everywhere(""), a)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if strings.Join(a.asked, ",") != strings.Join(tc.asked, ",") {
			t.Errorf("%s asked %q, want %q", tc.ref, a.asked, tc.asked)
		}
		res, err := addserver.Write(t.Context(), p, addserver.Options{File: file, Env: func(string) (string, bool) { return "", false }})
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		said.WriteString(res.Text(p))
		held, err := pins.HeldUntilReviewed(filepath.Join(os.Getenv("DSH_HOME"), "pins"), res.Name)
		if err != nil || !strings.Contains(held, "added by dsh-host add from "+p.From) {
			t.Errorf("%s: hold %q, %v", res.Name, held, err)
		}
	}
	got, _ := os.ReadFile(file)
	clean := func(s string) []byte {
		s = strings.ReplaceAll(s, c.URL(), "REGISTRY")
		s = strings.ReplaceAll(s, dir, "/DIR")
		return []byte(strings.ReplaceAll(s, file, "composition.yml"))
	}
	golden.Check(t, "added", clean(string(got)), *update)
	golden.Check(t, "added_output", clean(said.String()), *update)
}

// TestRemoveUndoesAdd: remove takes back what add wrote, byte for byte,
// and a removed server can be added again.
func TestRemoveUndoesAdd(t *testing.T) {
	file := compositionCopy(t)
	orig, _ := os.ReadFile(file)
	p, err := addserver.Command("files", "npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := addserver.Write(t.Context(), p, addserver.Options{File: file}); err != nil {
			t.Fatal(err)
		}
		if _, err := addserver.Write(t.Context(), p, addserver.Options{File: file}); err == nil || !strings.Contains(err.Error(), "already there") {
			t.Errorf("a second add of files: %v, want refused as already there", err)
		}
		text, err := addserver.RemoveText(t.Context(), file, "files")
		if err != nil || !strings.Contains(text, "removed files from "+file) {
			t.Fatalf("remove: %q, %v", text, err)
		}
		if got, _ := os.ReadFile(file); string(got) != string(orig) {
			t.Fatalf("after remove:\n%s\nwant:\n%s", got, orig)
		}
	}
	if _, err := addserver.RemoveText(t.Context(), file, "nothing"); err == nil || !strings.Contains(err.Error(), "no MCP server \"nothing\" (its servers: demo)") {
		t.Errorf("remove of an unknown server: %v", err)
	}
	if _, err := addserver.RemoveText(t.Context(), file, "fold"); err == nil {
		t.Error("remove took out the fold entry, which is no MCP server")
	}
}

// TestAddManual: a command line and a URL, their inline secrets moved to
// variables with the export lines said.
func TestAddManual(t *testing.T) {
	file := compositionCopy(t)
	p, err := addserver.Command("gh", "npx", []string{"-y", "@modelcontextprotocol/server-github"}, map[string]string{"GITHUB_TOKEN": "ghp_secret", "LOG": "debug"})
	if err != nil {
		t.Fatal(err)
	}
	// A server once called gh left its pins: --trust drops them, as
	// they are not this server's.
	pinsDir := filepath.Join(os.Getenv("DSH_HOME"), "pins")
	if err := pins.HoldUntilReviewed(pinsDir, "gh", "an earlier gh"); err != nil {
		t.Fatal(err)
	}
	res, err := addserver.Write(t.Context(), p, addserver.Options{File: file, Trust: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pinsDir, "gh.json")); !os.IsNotExist(err) {
		t.Errorf("the pins of an earlier gh stay after add --trust: %v", err)
	}
	text := res.Text(p)
	r, err := addserver.Remote("web", "http", "https://mcp.example.com/mcp", map[string]string{"Authorization": "Bearer tok123"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = addserver.Write(t.Context(), r, addserver.Options{File: file})
	if err != nil {
		t.Fatal(err)
	}
	text += res.Text(r)
	got, _ := os.ReadFile(file)
	if strings.Contains(string(got), "ghp_secret") || strings.Contains(string(got), "tok123") {
		t.Errorf("a secret is in the file:\n%s", got)
	}
	for _, want := range []string{"GITHUB_TOKEN: ${GITHUB_TOKEN}", "LOG: debug", "Authorization: Bearer ${WEB_TOKEN}", "connect: [443]"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("file lacks %q:\n%s", want, got)
		}
	}
	for _, want := range []string{"export GITHUB_TOKEN='ghp_secret'", "export WEB_TOKEN='tok123'", "trusted on first use (--trust)", "held until you review them", "dsh-host trust web"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []struct{ name, cmd string }{{"a/b", "x"}, {"tools", "x"}, {"policy", "x"}, {strings.Repeat("a", 33), "x"}, {"-rf", "x"}} {
		if _, err := addserver.Command(bad.name, bad.cmd, nil, nil); err == nil {
			t.Errorf("name %q accepted", bad.name)
		}
	}
	if _, err := addserver.Remote("x", "ws", "https://x", nil); err == nil {
		t.Error("transport ws accepted")
	}
	if _, err := addserver.Remote("x", "http", "file:///etc/passwd", nil); err == nil {
		t.Error("a file URL accepted")
	}
}

// TestSymlinkedCompositionStaysALink: add and remove write the file a
// symlinked composition leads to (a dotfiles setup), not over the link.
func TestSymlinkedCompositionStaysALink(t *testing.T) {
	real := compositionCopy(t)
	link := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	p, err := addserver.Command("echo", "echo", []string{"hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := addserver.Write(t.Context(), p, addserver.Options{File: link, Trust: true}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("after add the composition is no link: %v", err)
	}
	if b, _ := os.ReadFile(real); !strings.Contains(string(b), "id: echo") {
		t.Errorf("the linked file lacks the entry:\n%s", b)
	}
	if _, err := addserver.RemoveText(t.Context(), link, "echo"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("after remove the composition is no link: %v", err)
	}
}

// TestConcurrentAdds: adds to one composition at once (an agent running
// several) each land; none replaces the file from a stale read.
func TestConcurrentAdds(t *testing.T) {
	file := compositionCopy(t)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			p, err := addserver.Command(fmt.Sprintf("s%d", i), "echo", nil, nil)
			if err == nil {
				_, err = addserver.Write(context.Background(), p, addserver.Options{File: file, Trust: true})
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	b, _ := os.ReadFile(file)
	for i := range n {
		if !strings.Contains(string(b), fmt.Sprintf("id: s%d\n", i)) {
			t.Errorf("s%d is missing:\n%s", i, b)
		}
	}
}
