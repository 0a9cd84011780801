package webui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/testkit/browsertest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/webui"
)

// serversRig is a host of one fixture server that writes its pid at each
// start, under a policy that asks before count, and its web console.
type serversRig struct {
	h      *host.Host
	starts string
	con    *webui.Console
}

func startServersRig(t *testing.T) *serversRig {
	t.Helper()
	home := t.TempDir()
	t.Setenv("DSH_HOME", home)
	starts := filepath.Join(home, "run", "starts")
	if err := os.MkdirAll(filepath.Dir(starts), 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"-counter", "-starts-file", starts}
	file := filepath.Join(home, "composition.yml")
	composition := fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [%q, %q, %q]
      reconnect: {initialDelayMs: 20, maxDelayMs: 200}
      %s
  - id: policy
    name: policy
    config:
      askTimeout: 30s
      rules:
        - tools: ["mcp__fx__count"]
          action: ask
`, mcptest.FixtureBinary(t), args[0], args[1], args[2], mcptest.SandboxWrite(mcptest.FixtureWrites(args...)...))
	if err := os.WriteFile(file, []byte(composition), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := hostrun.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := hostrun.Start(ctx, c, &host.Options{Logger: quiet}, nil)
	stopFollow := hostrun.Follow(ctx, h, file, nil, quiet)
	t.Cleanup(func() {
		stopFollow()
		cancel()
		if !hostrun.Shutdown(h, quiet) {
			t.Error("the host did not shut down cleanly")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	con, err := webui.StartFor(&app.Local{Host: h, File: file}, file, "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { con.Close() })
	return &serversRig{h: h, starts: starts, con: con}
}

// pid is the server's process as its last start wrote it.
func (r *serversRig) pid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(r.starts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	pid, err := strconv.Atoi(strings.TrimPrefix(lines[len(lines)-1], "start "))
	if err != nil {
		t.Fatalf("starts file %q: %v", b, err)
	}
	return pid
}

// cellText is the text of a cell of fx's row on the Servers page.
func cellText(t *testing.T, b *browsertest.Browser, class string) string {
	t.Helper()
	return browsertest.Eval[string](t, b, `(document.querySelector('tr[data-id="fx"] td.`+class+`') || {}).textContent || ""`)
}

// TestServersPageInBrowser: the Servers page shows a server's transport
// and its reconnects (the server's process killed under it), and
// Restart runs it anew: another process, the row active again.
func TestServersPageInBrowser(t *testing.T) {
	r := startServersRig(t)
	b := browsertest.Start(t, 90*time.Second)
	base := origin(r.con.URL())
	b.Do(t, chromedp.Navigate(r.con.URL()), chromedp.WaitVisible("h1"))
	b.Do(t, chromedp.Navigate(base+"/servers"), chromedp.WaitVisible(`tr[data-id="fx"] td.transport`))
	if tr, rc := cellText(t, b, "transport"), cellText(t, b, "reconnects"); tr != "stdio" || rc != "0" {
		t.Errorf("fx shows transport %q, reconnects %q; want stdio and 0", tr, rc)
	}

	first := r.pid(t)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// A reconnect changes no state, which is what the page follows:
	// it shows on the next load.
	mcptest.WaitFor(t, 20*time.Second, "the server connected again", func() bool {
		st := host.Find(r.h.Status(), "fx")
		return st.Reconnects == 1 && st.LastError == ""
	})
	b.Do(t, chromedp.Navigate(base+"/servers"), chromedp.WaitVisible(`tr[data-id="fx"] td.reconnects`))
	if rc := cellText(t, b, "reconnects"); rc != "1" {
		t.Errorf("after the server was killed and reconnected the page shows %q reconnects; want 1", rc)
	}
	second := r.pid(t)
	if second == first {
		t.Fatal("no new process after the kill")
	}

	b.Do(t, chromedp.Click(`button[data-action="restart"][data-id="fx"]`),
		chromedp.WaitVisible(`#action-out:not(:empty)`))
	mcptest.WaitFor(t, 20*time.Second, "the restart's outcome", func() bool {
		return !strings.HasSuffix(browsertest.Eval[string](t, b, `document.querySelector("#action-out").textContent`), "…")
	})
	if out := browsertest.Eval[string](t, b, `document.querySelector("#action-out").textContent`); out != "fx: restarted" {
		t.Errorf("after Restart the page says %q; want fx: restarted", out)
	}
	if third := r.pid(t); third == second {
		t.Errorf("the server's pid is still %d after Restart", third)
	} else if err := syscall.Kill(second, 0); err == nil {
		// The old run is disposed once the new one is live.
		mcptest.WaitFor(t, 20*time.Second, "the old process to exit", func() bool { return syscall.Kill(second, 0) != nil })
	}
	if st := host.Find(r.h.Status(), "fx"); st.State != host.StateActive || st.Reconnects != 0 {
		t.Errorf("fx after Restart: %+v; want active, its count started over", st)
	}
	mcptest.WaitFor(t, 20*time.Second, "the row active again", func() bool {
		return browsertest.Eval[string](t, b, `(document.querySelector('tr[data-id="fx"]') || {dataset: {}}).dataset.state || ""`) == "active"
	})
	b.Clean(t, "servers")
}
