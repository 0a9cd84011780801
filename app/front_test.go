package app_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestConsoleFrontEnd: what a console needs of a host, attached or not:
// the tools and the prompt as its own caller kind sees them, the slash
// commands for /help, --yes ahead of a console's answerer, a reload of a
// host that does not follow its file refused at once, and the errors a
// front end tells apart (errors.Is) kept over the socket.
func TestConsoleFrontEnd(t *testing.T) {
	composition := strings.Replace(fixtureComposition(t, nil), `        - tools: ["mcp__fx__fail"]`, `        - tools: ["mcp__fx__add"]
          callers: [console]
          action: deny
        - tools: ["mcp__fx__fail"]`, 1)
	both(t, composition, func(t *testing.T, e *env) {
		ctx := t.Context()
		withheld := func(req app.ToolsRequest) bool {
			t.Helper()
			list, err := e.Tools(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.Tools, func(tl app.Tool) bool { return tl.Name == "mcp__fx__add" })
			if i < 0 {
				t.Fatalf("mcp__fx__add not listed for %+v", req)
			}
			return list.Tools[i].Withheld
		}
		if withheld(app.ToolsRequest{}) || !withheld(app.ToolsRequest{Caller: "console"}) {
			t.Error("mcp__fx__add: want offered to call, withheld from console")
		}
		if p, err := e.Prompt(ctx, app.ToolsRequest{Caller: "console"}); err != nil || strings.Contains(p.ToolsJSON, `"mcp__fx__add"`) || !strings.Contains(p.ToolsJSON, `"mcp__fx__greet"`) {
			t.Errorf("console's prompt: %v; want it without mcp__fx__add: %s", err, p.ToolsJSON)
		}
		if p, err := e.Prompt(ctx, app.ToolsRequest{}); err != nil || !strings.Contains(p.ToolsJSON, `"mcp__fx__add"`) {
			t.Errorf("call's prompt: %v; want it with mcp__fx__add", err)
		}
		for _, claim := range []string{"gateway", "chat"} {
			if _, err := e.Tools(ctx, app.ToolsRequest{Caller: claim}); err == nil {
				t.Errorf("tools as %q: no error", claim)
			}
			if _, err := e.Prompt(ctx, app.ToolsRequest{Caller: claim}); err == nil {
				t.Errorf("prompt as %q: no error", claim)
			}
		}

		cmds, err := e.Commands(ctx)
		if err != nil || !slices.ContainsFunc(cmds, func(c app.CommandInfo) bool { return c.Name == "policy" && c.Usage != "" && c.Description != "" }) {
			t.Errorf("commands: %+v, %v; want /policy with its usage and description", cmds, err)
		}

		// A console's answerer that declines: without --yes it is asked
		// and the call refused; with --yes it is not asked.
		no := &answerWith{res: elicit.Result{Action: elicit.Decline}}
		count := app.CallRequest{Tool: "mcp__fx__count", Args: []byte(`{}`), Caller: "console", Answer: no}
		if res, err := e.Call(ctx, count); err != nil || !errors.Is(res.Err, tools.ErrRefused) || no.count() != 1 {
			t.Errorf("declined: %v, %v, %d questions", res.Err, err, no.count())
		}
		count.Yes = true
		if res, err := e.Call(ctx, count); err != nil || res.Err != nil || no.count() != 1 {
			t.Errorf("with yes: %v, %v, %d questions; want it run unasked", res.Err, err, no.count())
		}

		// No agent: the kind holds attached too (a console says so).
		if _, err := e.Chat(ctx, app.ChatRequest{Text: "hi"}); !errors.Is(err, app.ErrNoAgent) {
			t.Errorf("chat without an agent: %v, want ErrNoAgent", err)
		}
	})
}

// TestAgentNotRunning: an agent entry that failed is named with its
// error, and still is ErrNoAgent.
func TestAgentNotRunning(t *testing.T) {
	composition := fixtureComposition(t, nil) + `  - id: brain
    name: agent
    config:
      baseUrl: http://127.0.0.1:1
      apiKeyEnv: APP_TEST_UNSET_KEY
`
	both(t, composition, func(t *testing.T, e *env) {
		_, err := e.ChatSession(t.Context(), app.ChatSessionRequest{})
		if !errors.Is(err, app.ErrNoAgent) || !strings.Contains(err.Error(), `entry "brain"`) || !strings.Contains(err.Error(), "APP_TEST_UNSET_KEY") {
			t.Errorf("session on a failed agent: %v; want ErrNoAgent naming the entry and its error", err)
		}
	})
}

// TestReloadNotWatched: a host that does not follow its file (chat's, a
// one-shot command's) refuses a reload at once instead of waiting for an
// outcome that never comes.
func TestReloadNotWatched(t *testing.T) {
	for _, c := range []struct {
		name string
		open constructor
	}{{"local", local}, {"socket", socket}} {
		t.Run(c.name, func(t *testing.T) {
			h, file := startUnwatched(t, fixtureComposition(t, nil))
			a, _ := c.open(t, h, file)
			if _, err := a.Reload(t.Context()); !errors.Is(err, app.ErrNotWatched) {
				t.Errorf("reload: %v, want ErrNotWatched", err)
			}
		})
	}
}
