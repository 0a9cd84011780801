package chatcomp_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/chatcomp"
	_ "github.com/dsh-host/dsh-host/plugins/agent"
	_ "github.com/dsh-host/dsh-host/plugins/workspace"
	_ "github.com/dsh-host/dsh-host/services/policy"
)

func write(t *testing.T, p, text string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoad: a named file, then composition.yml, then $DSH_HOME/chat.yml,
// then the built-in workspace composition (the agent and the workspace,
// no server), which checks clean; a named file that is missing is an
// error naming it, never the fallback.
func TestLoad(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	t.Setenv("DSH_HOME", home)
	t.Chdir(work)
	ids := func(c *host.Composition) []string {
		var s []string
		for _, e := range c.Entries {
			s = append(s, e.ID+":"+e.Name)
		}
		return s
	}
	c, path, src, err := chatcomp.Load("composition.yml", false)
	if err != nil || src != chatcomp.BuiltIn || path != filepath.Join(work, chatcomp.BuiltinName) {
		t.Fatalf("built in: %q %v %v", path, src, err)
	}
	if got := ids(c); !slices.Equal(got, []string{"workspace:workspace", "agent:agent"}) {
		t.Errorf("built-in entries %v, want the workspace and the agent alone", got)
	}
	if err := host.Check(c); err != nil {
		t.Errorf("the built-in composition does not check: %v", err)
	}
	if _, _, _, err := chatcomp.Load("missing.yml", true); err == nil || !strings.Contains(err.Error(), "missing.yml") {
		t.Errorf("a named missing file: %v, want an error naming it", err)
	}
	write(t, filepath.Join(home, chatcomp.UserFile), "plugins:\n  - {id: ws, name: workspace}\n")
	if c, path, src, err := chatcomp.Load("composition.yml", false); err != nil || src != chatcomp.User || path != filepath.Join(home, chatcomp.UserFile) || ids(c)[0] != "ws:workspace" {
		t.Errorf("user file: %q %v %v", path, src, err)
	}
	write(t, filepath.Join(work, "composition.yml"), "plugins:\n  - {id: here, name: workspace}\n")
	if c, path, src, err := chatcomp.Load("composition.yml", false); err != nil || src != chatcomp.Named || path != "composition.yml" || ids(c)[0] != "here:workspace" {
		t.Errorf("composition.yml: %q %v %v", path, src, err)
	}
}
