package childenv

import (
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMinimalFoldsOnWindowsOnly: Windows names have no case: Path is
// PATH there, and only there.
func TestMinimalFoldsOnWindowsOnly(t *testing.T) {
	if !Minimal("Path", true) || Minimal("Path", false) || !Minimal("lc_all", true) || Minimal("lc_all", false) {
		t.Error("Minimal does not fold case on Windows only")
	}
	for _, name := range []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "USER", "SHELL"} {
		if !Minimal(name, false) {
			t.Errorf("Minimal(%s) = false, want it passed", name)
		}
	}
	for _, name := range []string{"DEEPSEEK_API_KEY", "OPENAI_API_KEY", "DSH_HOME", "DSH_TOKEN", "GITHUB_TOKEN", "PATHEXTRA", "XLC_ALL"} {
		if Minimal(name, false) {
			t.Errorf("Minimal(%s) = true, want it kept from the child", name)
		}
	}
}

// TestKeep: the minimal variables and the listed ones, in the
// environment's order; a listed name matches whole, not as a prefix.
func TestKeep(t *testing.T) {
	environ := []string{"PATH=/bin", "DEEPSEEK_API_KEY=sk", "GOPATH=/g", "GOPATHS=/x", "=C:=C:\\", "NOEQUALS", "LC_ALL=C", "DSH_TOKEN=t", "HOME=/h"}
	want := []string{"PATH=/bin", "GOPATH=/g", "LC_ALL=C", "HOME=/h"}
	if runtime.GOOS == "windows" {
		t.Skip("names fold on Windows")
	}
	if diff := cmp.Diff(want, Keep(environ, []string{"GOPATH", "UNSET"})); diff != "" {
		t.Errorf("Keep (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PATH=/bin", "LC_ALL=C", "HOME=/h"}, Keep(environ, nil)); diff != "" {
		t.Errorf("Keep without names (-want +got):\n%s", diff)
	}
}

// TestCheckName: a name is letters, digits and _; a NAME=value, a
// pattern or an empty name is refused saying what to write.
func TestCheckName(t *testing.T) {
	for _, name := range []string{"GOPATH", "_x", "a1", "NPM_CONFIG_REGISTRY"} {
		if err := CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v", name, err)
		}
	}
	for name, want := range map[string]string{
		"":           "an empty name",
		"FOO=bar":    "its value is the host's",
		"AWS_*":      "not a variable's name",
		"1PASSWORD":  "not starting with a digit",
		"WITH SPACE": "not a variable's name",
		"A\x00B":     "not a variable's name",
		"É":          "not a variable's name",
	} {
		if err := CheckName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckName(%q) = %v, want %q", name, err, want)
		}
	}
}
