package chatui

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// TestCompleter: Tab's candidates for a first word starting with / (the
// console's, chat's and the agent's commands), for @ (the servers'
// resources as a turn reads them), and for a path; nothing for a plain
// word.
func TestCompleter(t *testing.T) {
	srv := openaitest.New(t)
	comp := strings.Replace(chatComposition(t, srv), "args: [-progress]", "args: [-progress, -resources, \"2\"]", 1)
	_, h := startChat(t, comp, console.Stdio{In: strings.NewReader(""), Out: os.Stderr, Err: os.Stderr})
	complete := completer(t.Context(), h)

	word, cands := complete("/co")
	if word != "/co" || !slices.Contains(cands, "/cost") || !slices.Contains(cands, "/compact") || !slices.Contains(cands, "/quit") || !slices.Contains(cands, "/retry") {
		t.Errorf("/co: %q %q", word, cands)
	}
	if _, cands := complete("say /co"); slices.Contains(cands, "/cost") {
		t.Errorf("a / word that is not first is a path, not a command: %q", cands)
	}
	word, cands = complete("read @de")
	if word != "@de" || !slices.Contains(cands, "@demo:fixture://image.png") {
		t.Errorf("@de: %q %q", word, cands)
	}

	dir := t.TempDir()
	for _, name := range []string{"notes.md", "notes-old.md", ".hidden"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	os.Mkdir(filepath.Join(dir, "notebooks"), 0o700)
	word, cands = complete("look at " + dir + "/no")
	slices.Sort(cands)
	want := []string{dir + "/notebooks/", dir + "/notes-old.md", dir + "/notes.md"}
	if word != dir+"/no" || !slices.Equal(cands, want) {
		t.Errorf("path: %q %q, want %q", word, cands, want)
	}
	if _, cands := complete("hello wor"); len(cands) != 0 {
		t.Errorf("a plain word: %q", cands)
	}
}
