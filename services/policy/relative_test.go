package policy_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	_ "github.com/dsh-host/dsh-host/plugins/greeter"
)

// A relative audit.dir (and pins.dir) is the composition's directory's,
// whatever directory the host starts in: `dsh-host audit`, `dsh-host add`
// and the web console read the same place (host.EntryPath).
func TestRelativeDirsAreTheCompositions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "composition.yml")
	c, err := host.ParseComposition(file, []byte(`plugins:
  - id: greeter
    name: greeter
  - id: policy
    name: policy
    config:
      audit: {dir: trail}
      pins: {dir: pins}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	defer func() {
		if err := h.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	if _, err := h.Reconcile(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	for _, st := range h.Status() {
		if st.ID == "policy" && st.State != host.StateActive {
			t.Fatalf("policy is %s: %s", st.State, st.Err)
		}
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "trail")); !os.IsNotExist(err) {
		t.Errorf("the trail went under the host's working directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "trail")); err != nil {
		t.Errorf("no trail beside the composition: %v", err)
	}
}
