package browser

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

func TestCommand(t *testing.T) {
	const u = "http://127.0.0.1:9/authorize?a=b"
	for _, tc := range []struct {
		env  string
		want []string
	}{
		{"firefox", []string{"firefox", u}},
		{"firefox --new-window", []string{"firefox", "--new-window", u}},
		{"w3m:lynx", []string{"w3m", u}},
		{"open -a Safari %s --bg", []string{"open", "-a", "Safari", u, "--bg"}},
	} {
		if got := command(tc.env, u); !cmp.Equal(got, tc.want) {
			t.Errorf("BROWSER=%q: %q, want %q", tc.env, got, tc.want)
		}
	}
	if got := command("", u); got[len(got)-1] != u {
		t.Errorf("platform opener %q does not end with the URL", got)
	}
}

// Open runs $BROWSER with the URL last, and says so when it cannot.
func TestOpenRunsBROWSER(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses a shell script")
	}
	dir := t.TempDir()
	got := filepath.Join(dir, "args")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", script+" --new-window")
	if err := Open("http://127.0.0.1:9/authorize?a=b"); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, 10*time.Second, "the browser to run with the URL last", func() bool {
		data, _ := os.ReadFile(got)
		return string(data) == "--new-window http://127.0.0.1:9/authorize?a=b\n"
	})
	t.Setenv("BROWSER", filepath.Join(dir, "missing"))
	if err := Open("http://x"); !errors.Is(err, ErrNoOpener) {
		t.Errorf("missing browser: %v", err)
	}
}

func TestWebPage(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://as.example/authorize?x=1": true,
		"http://127.0.0.1:8080/authorize":  true,
		"http://localhost/authorize":       true,
		"http://[::1]:9/authorize":         true,
		"http://as.example/authorize":      false,
		"x-evil-handler://localhost/run":   false,
		"file:///etc/passwd":               false,
		"javascript:alert(1)":              false,
		"https:///no-host":                 false,
		"http://127.0.0.1.evil.example/x":  false,
	} {
		if err := WebPage(u); (err == nil) != ok {
			t.Errorf("WebPage(%q) = %v, want ok %v", u, err, ok)
		}
	}
}
