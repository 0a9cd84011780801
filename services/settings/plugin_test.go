package settings

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestPlugin(t *testing.T) {
	home := t.TempDir()
	t.Setenv(dshhome.EnvVar, home)
	custom := filepath.Join(t.TempDir(), "s.yaml")
	for _, tt := range []struct{ composition, want string }{
		{"plugins: []\n", filepath.Join(home, "settings.yaml")},
		{"plugins:\n  - id: settings\n    name: settings\n    config:\n      file: " + custom + "\n", custom},
	} {
		h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
		c, err := host.ParseComposition("composition.yml", []byte(tt.composition), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Update(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		st, ok := host.Lookup(h, Key)
		if !ok {
			t.Fatalf("no settings service; status %+v", h.Status())
		} else if st.Path() != tt.want {
			t.Errorf("file %s, want %s", st.Path(), tt.want)
		}
		if err := h.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

// TestPluginLayers: the settings entry reads the project file beside the
// composition and the environment's overrides, and /settings shows each
// effective key with the file or variable it came from.
func TestPluginLayers(t *testing.T) {
	home := t.TempDir()
	t.Setenv(dshhome.EnvVar, home)
	t.Setenv("DSH_SETTINGS__UI__width", "100")
	proj := t.TempDir()
	comp := filepath.Join(proj, "composition.yml")
	projectFile := filepath.Join(proj, ".dsh", "settings.yaml")
	userFile := filepath.Join(home, "settings.yaml")
	for path, content := range map[string]string{
		comp:        "plugins: []\n",
		projectFile: "ui:\n  theme: light\n",
		userFile:    "ui:\n  theme: dark\n  width: 80\nother:\n  n: \"42\"\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	defer h.Shutdown(context.Background())
	c, err := host.ReadComposition(comp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	st, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatalf("no settings service; status %+v", h.Status())
	}
	if st.ProjectPath() != projectFile {
		t.Errorf("project file %s, want %s", st.ProjectPath(), projectFile)
	}
	if got, _, err := Read[ui](st, "ui"); err != nil || got != (ui{Theme: "light", Width: 100}) {
		t.Errorf("ui = %+v, %v", got, err)
	}
	cmds, ok := host.Lookup(h, commands.Key)
	if !ok {
		t.Fatal("no commands service")
	}
	reply := cmds.Run(context.Background(), tools.Caller{}, "/settings")
	if reply.Error {
		t.Fatal(reply.Text)
	}
	lines := strings.Split(reply.Text, "\n")
	want := []string{
		`other.n = "42"  (` + userFile + `)`,
		`ui.theme = light  (` + projectFile + `)`,
		`ui.width = 100  (DSH_SETTINGS__UI__width)`,
	}
	if len(lines) < 1 || !strings.Contains(lines[0], userFile) || !strings.Contains(lines[0], projectFile) {
		t.Errorf("header %q does not name both files", lines[0])
	}
	if d := cmp.Diff(want, lines[1:]); d != "" {
		t.Errorf("/settings (-want +got):\n%s", d)
	}
	reply = cmds.Run(context.Background(), tools.Caller{}, "/settings other")
	if got := strings.Split(reply.Text, "\n"); len(got) != 2 || got[1] != want[0] {
		t.Errorf("/settings other = %q", reply.Text)
	}
}
