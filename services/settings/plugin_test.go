package settings

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/dshhome"
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
