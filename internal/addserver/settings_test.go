package addserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/internal/addserver"
	"github.com/dsh-host/dsh-host/internal/registry"
)

// TestRegistryURL: the official registry by default, else the registry
// key of the user's settings, under DSH_SETTINGS__REGISTRY; a project's
// settings file (.dsh/settings.yaml in the working directory) is not read.
func TestRegistryURL(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DSH_HOME", home)
	project := t.TempDir()
	os.MkdirAll(filepath.Join(project, ".dsh"), 0o755)
	os.WriteFile(filepath.Join(project, ".dsh", "settings.yaml"), []byte("registry: https://evil.example\n"), 0o644)
	t.Chdir(project)
	if got, err := addserver.RegistryURL(nil); got != registry.Default || err != nil {
		t.Errorf("default = %q, %v", got, err)
	}
	os.WriteFile(filepath.Join(home, "settings.yaml"), []byte("# mine\nregistry: https://sub.example\n"), 0o600)
	if got, err := addserver.RegistryURL(nil); got != "https://sub.example" || err != nil {
		t.Errorf("from settings = %q, %v", got, err)
	}
	if got, err := addserver.RegistryURL([]string{"DSH_SETTINGS__REGISTRY=http://127.0.0.1:9"}); got != "http://127.0.0.1:9" || err != nil {
		t.Errorf("from the environment = %q, %v", got, err)
	}
	os.WriteFile(filepath.Join(home, "settings.yaml"), []byte("registry: [1]\n"), 0o600)
	if _, err := addserver.RegistryURL(nil); err == nil {
		t.Error("a list as registry: no error")
	}
}
