package homepath

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultAndCheck(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DSH_HOME", home)
	if got, want := Default("settings.yaml"), filepath.Join(home, "settings.yaml"); got != want {
		t.Fatalf("Default = %q, want %q", got, want)
	}
	if err := Check("file", "/x/settings.yaml"); err != nil {
		t.Fatalf("Check of a path: %v", err)
	}
	err := Check("file", "")
	if err == nil || !strings.HasPrefix(err.Error(), "file: must not be empty") {
		t.Fatalf("Check of an empty path = %v, want an error naming the key", err)
	}

	t.Setenv("DSH_HOME", "")
	t.Setenv("HOME", "")
	if got := Default("attachments"); got != "" {
		t.Fatalf("Default without a home = %q, want empty", got)
	}
	err = Check("dir", "")
	if err == nil || !strings.HasPrefix(err.Error(), "dir: not set and no default: ") {
		t.Fatalf("Check without a home = %v, want the reason", err)
	}
}
