package dshhome

import (
	"os"
	"path/filepath"
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
