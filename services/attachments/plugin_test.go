package attachments

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/dshhome"
)

func runHost(t *testing.T, composition string) (*host.Host, error) {
	t.Helper()
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		if err := h.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c, err := host.ParseComposition("composition.yml", []byte(composition), nil)
	if err != nil {
		return h, err
	}
	return h, h.Update(context.Background(), c)
}

func TestPluginDefaultsToDSHHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv(dshhome.EnvVar, home)
	h, err := runHost(t, "plugins: []\n")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatalf("no attachments service; status %+v", h.Status())
	}
	if want := filepath.Join(home, "attachments"); st.Dir() != want {
		t.Errorf("dir %s, want %s", st.Dir(), want)
	}
	if st.Limits() != DefaultLimits() {
		t.Errorf("limits %+v, want the defaults", st.Limits())
	}
	if s := host.Find(h.Status(), "attachments"); s.State != host.StateActive || s.Detail != st.Dir() {
		t.Errorf("status %+v", s)
	}
}

func TestPluginConfig(t *testing.T) {
	t.Setenv(dshhome.EnvVar, t.TempDir())
	dir := filepath.Join(t.TempDir(), "imgs")
	h, err := runHost(t, `plugins:
  - id: attachments
    name: attachments
    config:
      dir: `+dir+`
      maxImages: 2
      maxSide: 100
`)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatalf("no attachments service; status %+v", h.Status())
	}
	want := DefaultLimits()
	want.MaxImages, want.MaxSide = 2, 100
	if st.Dir() != dir || st.Limits() != want {
		t.Errorf("store at %s with %+v", st.Dir(), st.Limits())
	}
}

func TestPluginRejectsNegativeLimits(t *testing.T) {
	t.Setenv(dshhome.EnvVar, t.TempDir())
	for _, key := range []string{"maxImageBytes", "maxImages", "maxBatchBytes", "maxPixels", "maxSide"} {
		_, err := runHost(t, "plugins:\n  - id: attachments\n    name: attachments\n    config:\n      "+key+": -1\n")
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: -1 gave %v, want an error naming the key", key, err)
		}
	}
}
