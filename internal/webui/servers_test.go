package webui_test

import (
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
      askTimeout: 10m # past the test's own bounds: no timer races its clicks
      rules:
        - tools: ["mcp__fx__count"]
          action: ask
`, mcptest.FixtureBinary(t), args[0], args[1], args[2], mcptest.SandboxWrite(mcptest.FixtureWrites(args...)...))
	if err := os.WriteFile(file, []byte(composition), 0o600); err != nil {
		t.Fatal(err)
	}
	h := runFile(t, file)
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

// TestTryItAskInBrowser: try-it on a tool under an ask rule waits for the
// answer on the Approvals page of the same console (open in another
// tab): Allow once and the result shows; Deny and the policy's error
// shows, and the server never got that call.
func TestTryItAskInBrowser(t *testing.T) {
	r := startServersRig(t)
	b := browsertest.Start(t, 90*time.Second)
	base := origin(r.con.URL())
	b.Do(t, chromedp.Navigate(r.con.URL()), chromedp.WaitVisible("h1"))
	approvals, cancel := chromedp.NewContext(b.Ctx) // a second tab, signed in too
	defer cancel()
	if err := chromedp.Do(approvals, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible("#no-asks")); err != nil {
		t.Fatal(err)
	}
	tryIt := func() {
		t.Helper()
		b.Do(t, chromedp.Navigate(base+"/tool?name=mcp__fx__count"), chromedp.WaitVisible("#try"),
			chromedp.Click(`#try button[type="submit"]`), chromedp.WaitVisible(`#try-result`))
	}
	// answer clicks answer on the ask that shows in the other tab.
	answer := func(answer string) {
		t.Helper()
		if err := chromedp.Do(approvals, chromedp.WaitVisible(`section.ask`)); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(approvals, chromedp.Text(`section.ask`))
		if err != nil || !strings.Contains(text, "mcp__fx__count") || !strings.Contains(text, "ui") {
			t.Errorf("the ask shows %q (%v); want the tool and caller ui", text, err)
		}
		if err := chromedp.Do(approvals, chromedp.Click(`section.ask button[data-answer="`+answer+`"]`), chromedp.WaitNotPresent(`section.ask`)); err != nil {
			t.Fatal(err)
		}
	}
	result := func() string {
		t.Helper()
		b.Do(t, chromedp.WaitVisible(`#try-result .result-head`))
		return browsertest.Eval[string](t, b, `document.querySelector("#try-result").innerText`)
	}

	tryIt()
	answer("once")
	if got, content := result(), browsertest.Eval[string](t, b, `document.querySelector("#try-result pre.content").textContent`); content != "1" {
		t.Errorf("after Allow once the try-it result is %q; want the count, 1", got)
	}

	tryIt()
	answer("deny")
	if got := result(); !strings.Contains(got, "denied at the console") {
		t.Errorf("after Deny the try-it result is %q; want the policy's denial", got)
	}
	// The denied call never reached the server: the next allowed one is
	// its second.
	tryIt()
	answer("once")
	if got, content := result(), browsertest.Eval[string](t, b, `document.querySelector("#try-result pre.content").textContent`); content != "2" {
		t.Errorf("the call after a denial answers %q; want 2", got)
	}
	b.Clean(t, "try-it under ask")
}
