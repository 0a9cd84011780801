package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWorkContextFiles: the instruction files from the directory up to
// the repository root, outermost first, none above it; a large file cut;
// past the total, files are named and left out; home ends the walk
// where there is no repository.
func TestWorkContextFiles(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	sub := filepath.Join(repo, "pkg", "sub")
	writeFile(t, filepath.Join(top, "AGENTS.md"), "ABOVE THE REPO")
	writeFile(t, filepath.Join(repo, ".git", "HEAD"), "ref: x")
	writeFile(t, filepath.Join(repo, "AGENTS.md"), "repo rules")
	writeFile(t, filepath.Join(repo, "pkg", "CLAUDE.md"), strings.Repeat("c", maxInstructionFile+10))
	writeFile(t, filepath.Join(sub, "AGENTS.md"), strings.Repeat("s", maxInstructionFile))
	writeFile(t, filepath.Join(sub, "CLAUDE.md"), "nearest")
	now := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	w := readWorkContext(sub, "", now)
	for _, want := range []string{"Working directory: " + sub, "Today's date: 2026-12-06 (Sunday)", "Platform: ", "repo rules"} {
		if !strings.Contains(w.Text, want) {
			t.Errorf("no %q in:\n%.400s", want, w.Text)
		}
	}
	if strings.Contains(w.Text, "ABOVE THE REPO") {
		t.Error("a file above the repository root was read")
	}
	got := []InstructionFile{}
	got = append(got, w.Files...)
	want := []InstructionFile{
		{Path: filepath.Join(repo, "AGENTS.md"), Bytes: 10},
		// Past the total: the nearer files took it.
		{Path: filepath.Join(repo, "pkg", "CLAUDE.md"), Cut: maxInstructionFile + 10, Left: true},
		{Path: filepath.Join(sub, "AGENTS.md"), Bytes: maxInstructionFile},
		{Path: filepath.Join(sub, "CLAUDE.md"), Bytes: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("files = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("file %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := len(w.Text); n > maxInstructions+2000 {
		t.Errorf("the work context is %d bytes, past the cap", n)
	}
	// Without a repository, home ends the walk.
	home := filepath.Join(top, "home")
	writeFile(t, filepath.Join(home, "proj", "AGENTS.md"), "proj")
	writeFile(t, filepath.Join(home, "AGENTS.md"), "home's")
	w = readWorkContext(filepath.Join(home, "proj"), home, now)
	if !strings.Contains(w.Text, "home's") || !strings.Contains(w.Text, "proj") || strings.Contains(w.Text, "ABOVE THE REPO") {
		t.Errorf("under home:\n%s", w.Text)
	}
}

// TestWorkContextReachesTheModel: the system message the model gets says
// the directory and carries its AGENTS.md; /context names the file;
// workContext: false leaves both out.
func TestWorkContextReachesTheModel(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: x")
	writeFile(t, filepath.Join(dir, "AGENTS.md"), "Run go vet before you finish.")
	mcptest.FixtureBinary(t) // built from the module, before leaving it
	t.Chdir(dir)
	for _, on := range []bool{true, false} {
		srv := openaitest.New(t, openaitest.Turn{Content: "OK."})
		extra := ""
		if !on {
			extra = "      workContext: false\n"
		}
		e := start(t, srv, extra)
		if _, err := e.agent.Main().Turn(t.Context(), "hi", Output{}); err != nil {
			t.Fatal(err)
		}
		sys := messages(t, srv, 0)[0].Text()
		has := strings.Contains(sys, "Working directory: "+dir) && strings.Contains(sys, "Run go vet before you finish.")
		if has != on {
			t.Errorf("workContext %v: system = %q", on, sys)
		}
		u, err := e.agent.Main().Context(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if shown := strings.Contains(u.String(), filepath.Join(dir, "AGENTS.md")+": 29 bytes"); shown != on {
			t.Errorf("workContext %v: /context:\n%s", on, u)
		}
	}
}
