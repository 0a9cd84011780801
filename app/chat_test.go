package app_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// TestChatFrontEnd: what a chat front end needs besides the turn: the
// tools the model is offered, the agent's status lines (a retry's wait),
// an unattended turn's policy asks decided by Yes, and a sign that a
// reload restarted the agent.
func TestChatFrontEnd(t *testing.T) {
	limited := openaitest.Turn{Status: 429, Header: map[string]string{"retry-after-ms": "1"}}
	var turns []openaitest.Turn
	for range 2 {
		turns = append(turns, limited, openaitest.Turn{Content: "Hi."},
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "mcp__fx__count", Arguments: `{}`}}},
			openaitest.Turn{Content: "Refused."},
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c2", Name: "mcp__fx__count", Arguments: `{}`}}},
			openaitest.Turn{Content: "Counted."},
			openaitest.Turn{Content: "Fresh."})
	}
	model := openaitest.New(t, turns...)
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx := t.Context()
		info, err := e.ChatSession(ctx, app.ChatSessionRequest{})
		if err != nil || !slices.Contains(info.Tools, "mcp__fx__add") || slices.Contains(info.Tools, "mcp__fx__fail") {
			t.Fatalf("session's tools: %q, %v; want the agent's (add, not the denied fail)", info.Tools, err)
		}
		// A console's slash line that names no prompt runs nothing.
		if res, err := e.Chat(ctx, app.ChatRequest{Text: "/nope x", PromptOnly: true}); err != nil || !res.NotPrompt || res.Steps != 0 {
			t.Errorf("a prompt-only line naming no prompt: %+v, %v", res, err)
		}
		var status strings.Builder
		res, err := e.Chat(ctx, app.ChatRequest{Text: "hi", Events: func(ev app.ChatEvent) {
			if ev.Kind == app.ChatStatus {
				status.WriteString(ev.Text)
			}
		}})
		if err != nil || res.Answer != "Hi." || !strings.Contains(status.String(), "429") && !strings.Contains(status.String(), "rate") {
			t.Errorf("rate-limited turn: %+v, %v; status lines %q", res, err, status.String())
		}
		var done []string
		record := func(ev app.ChatEvent) {
			if ev.Kind == app.ChatCallDone {
				done = append(done, ev.Result+ev.Error)
			}
		}
		res, err = e.Chat(ctx, app.ChatRequest{Text: "count", Unattended: true, Events: record})
		if err != nil || res.Answer != "Refused." || len(done) != 1 || !strings.Contains(done[0], "--yes") {
			t.Errorf("unattended turn without yes: %+v, %v; calls %q, want a denial naming --yes", res, err, done)
		}
		done = nil
		res, err = e.Chat(ctx, app.ChatRequest{Text: "count", Unattended: true, Yes: true, Events: record})
		if err != nil || res.Answer != "Counted." || len(done) != 1 || done[0] != "1" || res.Restarted {
			t.Errorf("unattended turn with yes: %+v, %v; calls %q", res, err, done)
		}
		// A reload that changes the agent's config restarts it.
		b, err := os.ReadFile(e.File)
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(b), "apiKeyEnv: APP_TEST_KEY", "apiKeyEnv: APP_TEST_KEY\n      maxSteps: 7", 1)
		if err := os.WriteFile(e.File, []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		var first []string
		res, err = e.Chat(ctx, app.ChatRequest{Text: "again", Events: func(ev app.ChatEvent) { first = append(first, ev.Kind) }})
		if err != nil || res.Answer != "Fresh." || !res.Restarted || len(first) == 0 || first[0] != app.ChatRestarted {
			t.Errorf("turn after the agent restarted: %+v, %v, events %q; want Restarted, its event first", res, err, first)
		}
	})
}

// TestChatSessionAbsolutePath: a composition named relative to the
// working directory is saved under its absolute path, which --continue
// matches.
func TestChatSessionAbsolutePath(t *testing.T) {
	model := openaitest.New(t, openaitest.Turn{Content: "A."}, openaitest.Turn{Content: "A."})
	for _, c := range []struct {
		name string
		open constructor
	}{{"local", local}, {"socket", socket}} {
		t.Run(c.name, func(t *testing.T) {
			h, file := start(t, fixtureComposition(t, model))
			t.Chdir(filepath.Dir(file))
			a, _ := c.open(t, h, filepath.Base(file))
			if _, err := a.Chat(t.Context(), app.ChatRequest{Text: "q", Record: true}); err != nil {
				t.Fatal(err)
			}
			list, err := a.ChatSessions(t.Context(), app.ChatSessionsRequest{})
			if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Composition != file {
				t.Errorf("sessions: %+v, %v; want one of %s", list, err, file)
			}
		})
	}
}

// TestCallerKind: a request names its front end's caller kind, which the
// policy's rules match; a claim to be the gateway or the agent is refused,
// over the socket too.
func TestCallerKind(t *testing.T) {
	composition := strings.Replace(fixtureComposition(t, nil), `        - tools: ["mcp__fx__fail"]`, `        - tools: ["mcp__fx__add"]
          callers: [console]
          action: deny
        - tools: ["mcp__fx__add"]
          callers: [ui]
          action: deny
        - tools: ["mcp__fx__fail"]`, 1)
	both(t, composition, func(t *testing.T, e *env) {
		ctx := t.Context()
		add := app.CallRequest{Tool: "mcp__fx__add", Args: []byte(`{"a":1,"b":2}`)}
		if res, err := e.Call(ctx, add); err != nil || res.Err != nil {
			t.Errorf("add as call: %v, %v", res.Err, err)
		}
		add.Caller = "console"
		if res, err := e.Call(ctx, add); err != nil || res.Err == nil {
			t.Errorf("add as console: %v, %v; want the policy's denial", res.Err, err)
		}
		// The web console's try-it calls are the ui's: rules name it.
		add.Caller = "ui"
		if res, err := e.Call(ctx, add); err != nil || res.Err == nil || !strings.Contains(res.Err.Error(), "rule 2") {
			t.Errorf("add as ui: %v, %v; want the denial of the rule for ui", res.Err, err)
		}
		for _, claim := range []string{"gateway", "chat", "Console", "UI", "nope"} {
			add.Caller = claim
			if _, err := e.Call(ctx, add); err == nil || !strings.Contains(err.Error(), "front end calls as") {
				t.Errorf("add as %q: %v; want the claim refused", claim, err)
			}
			if _, err := e.Command(ctx, app.CommandRequest{Line: "/tools", Caller: claim}); err == nil {
				t.Errorf("/tools as %q: no error", claim)
			}
		}
	})
}
