//go:build unix

package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHealthCommand: `dsh-host health` against a real `serve --http`:
// 0 with /healthz's answer on the gateway's base URL and on its /mcp URL,
// 0 with --ready once ready; 1 once the gateway is gone; 2 without a URL.
func TestHealthCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startGateway(t, ctx, nil)
	p.waitReady(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"health", p.base + "/"}, p.base + "/healthz: 200 ok\n"},
		{[]string{"health", "--ready", p.url}, p.base + "/readyz: 200 ready\n"},
		{[]string{"health", p.url, "--ready", "--timeout", "10s"}, p.base + "/readyz: 200 ready\n"},
	} {
		code, out, errOut := dshHost(t, tc.args...)
		if code != exitOK || out != tc.want {
			t.Errorf("dsh-host %s = %d, %q, %q; want 0, %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	code, out, errOut := dshHost(t, "health", p.base)
	if code != exitFail || out != "" || !strings.Contains(errOut, p.base+"/healthz") {
		t.Errorf("health of a stopped gateway = %d, %q, %q; want 1 and an error naming the URL", code, out, errOut)
	}

	for _, args := range [][]string{{"health"}, {"health", p.base, p.base}, {"health", "--timeout", "0s", p.base}} {
		if code, _, _ := dshHost(t, args...); code != exitUsage {
			t.Errorf("dsh-host %s = %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
	code, _, errOut = dshHost(t, "health", "ftp://127.0.0.1/")
	if code != exitFail || !strings.Contains(errOut, "http or https") {
		t.Errorf("health ftp:// = %d, %q", code, errOut)
	}
}
