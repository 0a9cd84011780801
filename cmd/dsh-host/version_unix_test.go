//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestVersionStamped: a binary stamped as scripts/release stamps it
// (-ldflags -X) says its version and commit in `version`, `--version` and
// `version --json`, and the gateway it serves says the same version in
// serverInfo and in /metrics' dsh_build_info.
func TestVersionStamped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stamped := filepath.Join(t.TempDir(), "dsh-host")
	const pkg = "github.com/dsh-host/dsh-host/internal/version"
	build := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X "+pkg+".Version=v9.8.7-test -X "+pkg+".Commit=c0ffee", "-o", stamped, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want := fmt.Sprintf("dsh-host v9.8.7-test (commit c0ffee, %s, %s/%s)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.CommandContext(ctx, stamped, args...).Output()
		if err != nil || string(out) != want {
			t.Errorf("dsh-host %s = %q, %v; want %q", args[0], out, err, want)
		}
	}
	out, err := exec.CommandContext(ctx, stamped, "version", "--json").Output()
	var info map[string]string
	if err != nil || json.Unmarshal(out, &info) != nil || info["version"] != "v9.8.7-test" || info["commit"] != "c0ffee" || info["platform"] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json = %s, %v", out, err)
	}

	saved := binary
	binary = stamped
	p := startGateway(t, ctx, nil, "--metrics", "127.0.0.1:0")
	binary = saved
	var metricsURL string
	waitLog(t, p.logs, "the metrics listener", func(m map[string]any) bool {
		metricsURL, _ = m["url"].(string)
		return m["msg"] == "metrics listening"
	})
	cs := p.connect(t, ctx)
	if got := cs.InitializeResult().ServerInfo.Version; got != "v9.8.7-test" {
		t.Errorf("serverInfo.version = %q, want v9.8.7-test", got)
	}
	cs.Close()
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	line := fmt.Sprintf(`dsh_build_info{commit="c0ffee",goversion="%s",version="v9.8.7-test"} 1`, runtime.Version())
	if !strings.Contains(string(scrape), "\n"+line+"\n") {
		t.Errorf("the scrape has no line %s", line)
	}
	p.signal(t)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
}
