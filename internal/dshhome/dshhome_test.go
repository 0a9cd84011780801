package dshhome

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ env, want string }{
		{"", filepath.Join(home, ".dsh")},
		{"/srv/dsh", "/srv/dsh"},
		{"/srv/dsh/../x/", "/srv/x"},
		{"rel/dir", filepath.Join(wd, "rel/dir")},
	}
	for _, tt := range tests {
		t.Setenv(EnvVar, tt.env)
		got, err := Dir()
		if err != nil || got != tt.want {
			t.Errorf("DSH_HOME=%q: Dir() = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
	t.Setenv(EnvVar, "/d")
	if got, _ := Path("settings.yaml"); got != "/d/settings.yaml" {
		t.Errorf("Path = %q", got)
	}
}

func TestDirWithoutHome(t *testing.T) {
	t.Setenv(EnvVar, "")
	t.Setenv("HOME", "")
	if _, err := Dir(); err == nil {
		t.Error("Dir() without HOME or DSH_HOME succeeded")
	}
}

func TestDefaultAndCheckPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv(EnvVar, home)
	if got, want := Default("settings.yaml"), filepath.Join(home, "settings.yaml"); got != want {
		t.Fatalf("Default = %q, want %q", got, want)
	}
	if err := CheckPath("file", "/x/settings.yaml"); err != nil {
		t.Fatalf("Check of a path: %v", err)
	}
	err := CheckPath("file", "")
	if err == nil || !strings.HasPrefix(err.Error(), "file: must not be empty") {
		t.Fatalf("Check of an empty path = %v, want an error naming the key", err)
	}

	t.Setenv(EnvVar, "")
	t.Setenv("HOME", "")
	if got := Default("attachments"); got != "" {
		t.Fatalf("Default without a home = %q, want empty", got)
	}
	err = CheckPath("dir", "")
	if err == nil || !strings.HasPrefix(err.Error(), "dir: not set and no default: ") {
		t.Fatalf("Check without a home = %v, want the reason", err)
	}
}
