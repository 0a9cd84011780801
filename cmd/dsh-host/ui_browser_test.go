package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/browsertest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// agentServe is one `serve --stdio` of the composition, as an agent CLI
// starts it, and its client's session.
type agentServe struct {
	session *mcp.ClientSession
	pid     int
}

func startServe(t *testing.T, ctx context.Context, home, file, name string) agentServe {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--stdio", "-c", file)
	cmd.Env = append(os.Environ(), "DSH_HOME="+home)
	cmd.Stderr = os.Stderr
	// No elicitation capability: nobody at the client answers, so the
	// policy's ask goes to the web console.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return agentServe{session: cs, pid: cmd.Process.Pid}
}

// TestUIApprovalsFromTwoServes: two `serve --stdio` processes of one
// composition (two agent CLIs) call a tool a rule sends to ask; both asks
// reach the one web console; the call whose ask is allowed there returns
// the tool's result, the one denied there the policy's error; the audit
// page shows both.
func TestUIApprovalsFromTwoServes(t *testing.T) {
	home := attachHome(t)
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-counter]
  - id: policy
    name: policy
    config:
      askTimeout: 10m # past the test's own bounds: no timer races its clicks
      rules:
        - tools: ["mcp__fx__count"]
          action: ask
`, mcptest.FixtureBinary(t)))
	_, url := startUI(t, home, "-c", file)
	b := browsertest.Start(t, 90*time.Second)
	base := url[:strings.Index(url, "/?")]
	b.Do(t, chromedp.Navigate(url), chromedp.WaitVisible("h1"), chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible("#no-asks"))

	ctx, cancel := context.WithTimeout(t.Context(), 80*time.Second)
	defer cancel()
	a, z := startServe(t, ctx, home, file, "agent-a"), startServe(t, ctx, home, file, "agent-z")
	type called struct {
		res *mcp.CallToolResult
		err error
	}
	call := func(s agentServe) <-chan called {
		ch := make(chan called, 1)
		go func() {
			res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__count", Arguments: map[string]any{}})
			ch <- called{res, err}
		}()
		return ch
	}
	ca, cz := call(a), call(z)
	b.Do(t, chromedp.WaitVisible(`section.ask:nth-of-type(2)`))
	if n := browsertest.Eval[int](t, b, `document.querySelectorAll("section.ask").length`); n != 2 {
		t.Fatalf("%d asks on the page; want one of each serve", n)
	}
	// Allow a's, deny z's: each section names its host's pid.
	answer := func(s agentServe, button string) {
		t.Helper()
		js := fmt.Sprintf(`(() => { for (const s of document.querySelectorAll("section.ask")) {
		  if (s.querySelector('[data-f="pid"]').textContent === %q) { s.querySelector('button[data-answer=%q]').click(); return true } }
		  return false })()`, strconv.Itoa(s.pid), button)
		if !browsertest.Eval[bool](t, b, js) {
			t.Fatalf("no ask of pid %d on the page", s.pid)
		}
	}
	answer(a, "once")
	got := <-ca
	if got.err != nil || got.res.IsError || len(got.res.Content) == 0 || got.res.Content[0].(*mcp.TextContent).Text != "1" {
		t.Errorf("a's call allowed at the console: %+v, %v; want the tool's result 1", got.res, got.err)
	}
	answer(z, "deny")
	got = <-cz
	if got.err != nil || !got.res.IsError || !strings.Contains(got.res.Content[0].(*mcp.TextContent).Text, "denied at the console") {
		t.Errorf("z's call denied at the console: %+v, %v; want the policy's error", got.res, got.err)
	}
	b.Do(t, chromedp.WaitNotPresent(`section.ask`))
	b.Do(t, chromedp.Navigate(base+"/audit?tool=mcp__fx__count"), chromedp.WaitVisible(`#audit-rows tr:nth-child(2)`))
	if rows, _ := chromedp.Run(b.Ctx, chromedp.Text(`#audit-rows`)); !strings.Contains(rows, "console once") || !strings.Contains(rows, "console deny") {
		t.Errorf("the audit page shows\n%s\nwant both answers", rows)
	}
	b.Clean(t, "approvals of two serves")
}
