package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

func text(res tools.Result) string {
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// answerWith is an answerer that gives res and counts the questions.
type answerWith struct {
	res  elicit.Result
	mu   sync.Mutex
	asks []elicit.Request
}

func (a *answerWith) Answer(_ context.Context, req elicit.Request) (elicit.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asks = append(a.asks, req)
	return a.res, nil
}

func (a *answerWith) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asks)
}

func TestStatusToolsPrompt(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		ctx := t.Context()
		st, err := e.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fx := host.Find(st.Instances, "fx"); fx.State != host.StateActive || st.ToolCounts["fx"] == 0 {
			t.Errorf("fx: %+v, %d tools; want active with tools", fx, st.ToolCounts["fx"])
		}
		if b := host.Find(st.Instances, "broken"); b.State != host.StateFailed || b.Err == "" {
			t.Errorf("broken: %+v, want failed with its error", b)
		}
		// A failed instance's tools are traced to it by its claims, which
		// travel typed, attached or not.
		if o, ok := host.Owner(st.Instances, "mcp__broken__x"); !ok || o.ID != "broken" {
			t.Errorf("the owner of mcp__broken__x: %+v, %v; want broken", o, ok)
		}
		if st.PID != os.Getpid() || st.File != e.File {
			t.Errorf("status names pid %d, file %q", st.PID, st.File)
		}
		list, err := e.Tools(ctx, app.ToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var add *app.Tool
		for i := range list.Tools {
			if list.Tools[i].Name == "mcp__fx__add" {
				add = &list.Tools[i]
			}
		}
		if add == nil || add.Server != "fx" || add.RawName != "add" || add.Instance != "fx" || add.Withheld {
			t.Errorf("mcp__fx__add listed as %+v, want its origin fx/add and offered", add)
		}
		if len(list.Instances) != len(st.Instances) {
			t.Errorf("tools lists %d instances, status %d", len(list.Instances), len(st.Instances))
		}
		p, err := e.Prompt(ctx, app.ToolsRequest{})
		if err != nil || p.Count == 0 || !strings.Contains(p.ToolsJSON, "mcp__fx__add") {
			t.Errorf("prompt: %d tools, %v", p.Count, err)
		}
	})
}

func TestCall(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		ctx := t.Context()
		call := func(req app.CallRequest) tools.Result {
			t.Helper()
			res, err := e.Call(ctx, req)
			if err != nil {
				t.Fatalf("%s: %v", req.Tool, err)
			}
			return res
		}
		if res := call(app.CallRequest{Tool: "mcp__fx__add", Args: []byte(`{"a":1,"b":2}`)}); res.Err != nil || text(res) != "3" {
			t.Errorf("add: %q, %v", text(res), res.Err)
		}
		if res := call(app.CallRequest{Tool: "mcp__fx__nope", Args: []byte(`{}`)}); !errors.Is(res.Err, tools.ErrUnknownTool) {
			t.Errorf("unknown tool: %v, want ErrUnknownTool", res.Err)
		}
		if res := call(app.CallRequest{Tool: "mcp__fx__fail", Args: []byte(`{}`)}); !errors.Is(res.Err, tools.ErrRefused) || !strings.Contains(res.Err.Error(), "denied by policy rule 1") {
			t.Errorf("denied: %v, want a refusal naming rule 1", res.Err)
		}
		// Asked, with nobody to answer: refused, naming --yes; --yes runs it.
		if res := call(app.CallRequest{Tool: "mcp__fx__count", Args: []byte(`{}`)}); !errors.Is(res.Err, tools.ErrRefused) || !strings.Contains(res.Err.Error(), "--yes") {
			t.Errorf("ask without an answerer: %v, want refused naming --yes", res.Err)
		}
		if res := call(app.CallRequest{Tool: "mcp__fx__count", Args: []byte(`{}`), Yes: true}); res.Err != nil || text(res) != "1" {
			t.Errorf("ask with --yes: %q, %v", text(res), res.Err)
		}
		// Asked of the caller: its answer decides.
		no := &answerWith{res: elicit.Result{Action: elicit.Decline}}
		if res := call(app.CallRequest{Tool: "mcp__fx__count", Args: []byte(`{}`), Answer: no}); !errors.Is(res.Err, tools.ErrRefused) || no.count() != 1 {
			t.Errorf("declined: %v after %d questions, want refused after 1", res.Err, no.count())
		}
		yes := &answerWith{res: elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: elicit.ApproveOnce}}}
		res := call(app.CallRequest{Tool: "mcp__fx__count", Args: []byte(`{}`), Answer: yes})
		if res.Err != nil || text(res) != "2" || yes.count() != 1 {
			t.Errorf("approved once: %q, %v after %d questions", text(res), res.Err, yes.count())
		}
		if q := yes.asks[0]; q.Approval == nil || q.Approval.Tool != "mcp__fx__count" {
			t.Errorf("the question: %+v, want the policy's approval of mcp__fx__count", q)
		}
	})
}

func TestCallProgressAndQuestions(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		var mu sync.Mutex
		var steps []string
		res, err := e.Call(t.Context(), app.CallRequest{Tool: "mcp__fx__progress", Args: []byte(`{"steps":3,"ms":1}`),
			Progress: func(p tools.Progress) {
				mu.Lock()
				defer mu.Unlock()
				steps = append(steps, p.Message)
			}})
		if err != nil || res.Err != nil || text(res) != "done after 3 steps" {
			t.Fatalf("progress: %q, %v, %v", text(res), res.Err, err)
		}
		mu.Lock()
		if strings.Join(steps, "|") != "step 1 of 3|step 2 of 3|step 3 of 3" {
			t.Errorf("progress reports %q", steps)
		}
		mu.Unlock()

		ada := &answerWith{res: elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Ada"}}}
		res, err = e.Call(t.Context(), app.CallRequest{Tool: "mcp__fx__ask", Args: []byte(`{}`), Answer: ada})
		if err != nil || res.Err != nil || !strings.Contains(text(res), `"Ada"`) || ada.count() != 1 {
			t.Fatalf("ask: %q, %v, %v after %d questions", text(res), res.Err, err, ada.count())
		}
		if q := ada.asks[0]; q.Mode != elicit.ModeForm || q.Form == nil || q.Server != "fx" {
			t.Errorf("the question: %+v, want fx's form", q)
		}
		// Elicit "defaults" without an answerer fills the form's defaults;
		// the name has none, so it is declined.
		res, _ = e.Call(t.Context(), app.CallRequest{Tool: "mcp__fx__ask", Args: []byte(`{"nameDefault":"Bo"}`), Elicit: "defaults"})
		if !strings.Contains(text(res), `"Bo"`) {
			t.Errorf("defaults: %q", text(res))
		}
	})
}

// TestCallCancel: ending the caller's context mid-call ends the call on
// the host, over the socket too; the server sees the cancel.
func TestCallCancel(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		res, err := e.Call(ctx, app.CallRequest{Tool: "mcp__fx__progress", Args: []byte(`{"steps":1000,"ms":20}`),
			Progress: func(tools.Progress) { cancel() }})
		if err != nil || !errors.Is(res.Err, context.Canceled) {
			t.Errorf("cancelled call: %v, %v; want context.Canceled", res.Err, err)
		}
		// The host is still there and answers the next call.
		if res, err := e.Call(t.Context(), app.CallRequest{Tool: "mcp__fx__add", Args: []byte(`{"a":2,"b":2}`)}); err != nil || text(res) != "4" {
			t.Errorf("after the cancel: %q, %v", text(res), err)
		}
	})
}

// TestSocketGoneMidCall: a host that goes away during a call ends it
// with an error saying so, not a hang.
func TestSocketGoneMidCall(t *testing.T) {
	h, file := start(t, fixtureComposition(t, nil))
	a, kill := socket(t, h, file)
	res, err := a.Call(t.Context(), app.CallRequest{Tool: "mcp__fx__progress", Args: []byte(`{"steps":1000,"ms":20}`),
		Progress: func(tools.Progress) { go kill() }})
	// The host, closing, cancels the call and may still say so, or its
	// connection is cut first: either way the call ends, failed.
	if err == nil && !errors.Is(res.Err, context.Canceled) {
		t.Errorf("call when the host went: %+v, %v; want it ended with an error", res, err)
	}
	if err != nil && !strings.Contains(err.Error(), "ended the request without a result") {
		t.Errorf("call when the host went: %v, want an error saying the host ended it", err)
	}
}

func TestResourcesAndRead(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		ctx := t.Context()
		list, err := e.Resources(ctx, app.ResourcesRequest{Server: "fx"})
		if err != nil || len(list.Resources) < 2 || len(list.Templates) != 1 {
			t.Fatalf("resources: %d, templates %d, %v", len(list.Resources), len(list.Templates), err)
		}
		if _, err := e.Resources(ctx, app.ResourcesRequest{Server: "nope"}); err == nil || !strings.Contains(err.Error(), "fx") {
			t.Errorf("an unknown server: %v, want an error naming fx", err)
		}
		r, err := e.Read(ctx, app.ReadRequest{URI: "fixture://doc/001"})
		if err != nil || r.Server != "fx" || r.Text == "" {
			t.Errorf("read: %+v, %v", r, err)
		}
		r, err = e.Read(ctx, app.ReadRequest{Template: "fixture://doc/{n}", Args: map[string]string{"n": "002"}, Server: "fx"})
		if err != nil || r.URI != "fixture://doc/002" {
			t.Errorf("read the template: %+v, %v", r, err)
		}
		if _, err := e.Read(ctx, app.ReadRequest{URI: "fixture://nope"}); err == nil {
			t.Error("reading a resource nobody has: no error")
		}
	})
}

func TestCommandExplainTrust(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		ctx := t.Context()
		if r, err := e.Command(ctx, app.CommandRequest{Line: "/nope"}); err != nil || !r.Error {
			t.Errorf("unknown command: %+v, %v", r, err)
		}
		r, err := e.Explain(ctx, app.ExplainRequest{Tool: "mcp__fx__fail", Args: `{"x": 1}`})
		if err != nil || r.Error || !strings.Contains(r.Text, "deny") {
			t.Errorf("explain: %+v, %v", r, err)
		}
		if _, err := e.Explain(ctx, app.ExplainRequest{Tool: "a b"}); err == nil {
			t.Error("explain of a name with a space: no error")
		}
		// fx's tools are new to the pins: a review shows them, and its
		// digest approves exactly them.
		rv, err := e.Review(ctx, app.TrustRequest{Server: "fx", Tool: "add"})
		if err != nil || rv.Error || !rv.Pending || !strings.Contains(rv.Text, "server fx") || !strings.HasPrefix(rv.Digest, "sha256:") {
			t.Fatalf("review of fx: %+v, %v", rv, err)
		}
		if r, err := e.Trust(ctx, app.TrustRequest{Server: "fx", Tool: "add", Digest: rv.Digest}); err != nil || r.Error {
			t.Errorf("trust the reviewed digest: %+v, %v", r, err)
		}
		if rv, err := e.Review(ctx, app.TrustRequest{Server: "fx", Tool: "add"}); err != nil || rv.Pending {
			t.Errorf("review after trust: %+v, %v; want nothing pending", rv, err)
		}
		if rv, err := e.Review(ctx, app.TrustRequest{Server: "nope"}); err != nil || !rv.Error {
			t.Errorf("review of an unknown server: %+v, %v; want the policy's error", rv, err)
		}
		if r, err := e.Trust(ctx, app.TrustRequest{Server: "fx", Digest: "sha256:00"}); err != nil || !r.Error {
			t.Errorf("trust with a wrong digest: %+v, %v; want the policy's refusal", r, err)
		}
		if _, err := e.Trust(ctx, app.TrustRequest{Server: "fx", Digest: "x --digest y"}); err == nil {
			t.Error("a digest with spaces: no error")
		}
	})
}

// TestWatchAndReload: an edit disabling an entry is followed live, and
// Reload reports what it touched.
func TestWatchAndReload(t *testing.T) {
	composition := fixtureComposition(t, nil)
	both(t, composition, func(t *testing.T, e *env) {
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := e.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A follower that never reads holds nothing up.
		idle, err := e.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(composition, "  - id: broken\n", "  - id: broken\n    disabled: true\n", 1)
		if err := os.WriteFile(e.File, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := e.Reload(t.Context())
		if err != nil || res.Error != "" {
			t.Fatalf("reload: %+v, %v", res, err)
		}
		if b := host.Find(res.Instances, "broken"); b.State != host.StateDisabled {
			t.Errorf("after the reload broken is %s", b.State)
		}
		for ev := range ch {
			if ev.Instance.ID == "broken" && ev.Instance.State == host.StateDisabled {
				break
			}
		}
		cancel()
		for range ch {
			// Closed once ctx ends.
		}
		for range idle {
		}
	})
}

func TestChat(t *testing.T) {
	model := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "mcp__fx__add", Arguments: `{"a":1,"b":2}`}}},
		openaitest.Turn{Content: "The sum is 3.", Usage: &openaitest.Usage{PromptTokens: 50, CompletionTokens: 4}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c2", Name: "mcp__fx__count", Arguments: `{}`}}},
		openaitest.Turn{Content: "Counted."},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "mcp__fx__add", Arguments: `{"a":1,"b":2}`}}},
		openaitest.Turn{Content: "The sum is 3.", Usage: &openaitest.Usage{PromptTokens: 50, CompletionTokens: 4}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c2", Name: "mcp__fx__count", Arguments: `{}`}}},
		openaitest.Turn{Content: "Counted."},
	)
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx := t.Context()
		info, err := e.ChatSession(ctx, app.ChatSessionRequest{Record: true})
		if err != nil || info.Session == "" {
			t.Fatalf("new session: %+v, %v", info, err)
		}
		var kinds []string
		var answer strings.Builder
		res, err := e.Chat(ctx, app.ChatRequest{Text: "What is 1+2?", Conversation: info.Conversation, Events: func(ev app.ChatEvent) {
			kinds = append(kinds, ev.Kind)
			if ev.Kind == app.ChatText {
				answer.WriteString(ev.Text)
			}
			if ev.Kind == app.ChatCallDone && (ev.Call.Name != "mcp__fx__add" || ev.Result != "3") {
				t.Errorf("call done: %+v", ev)
			}
		}})
		if err != nil || res.Error != "" || res.Answer != "The sum is 3." || res.Steps != 1 || res.Session != info.Session {
			t.Fatalf("turn: %+v, %v", res, err)
		}
		if strings.TrimSpace(answer.String()) != "The sum is 3." {
			t.Errorf("streamed text %q", answer.String())
		}
		want := []string{app.ChatStep, app.ChatCallStart, app.ChatCallDone, app.ChatText, app.ChatStep}
		if got := compact(kinds); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("events %v, want %v", got, want)
		}
		// The policy's ask during a turn goes to the turn's answerer.
		yes := &answerWith{res: elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: elicit.ApproveOnce}}}
		var done []string
		res, err = e.Chat(ctx, app.ChatRequest{Text: "count", Conversation: info.Conversation, Answer: yes, Events: func(ev app.ChatEvent) {
			if ev.Kind == app.ChatCallDone {
				done = append(done, ev.Result+ev.Error)
			}
		}})
		if err != nil || res.Answer != "Counted." || yes.count() != 1 || len(done) != 1 || done[0] != "1" {
			t.Errorf("asked turn: %+v, %v; %d questions, calls %q", res, err, yes.count(), done)
		}
		list, err := e.ChatSessions(ctx, app.ChatSessionsRequest{Conversation: info.Conversation})
		if err != nil || len(list.Sessions) != 1 || !list.Sessions[0].Current || list.Sessions[0].ID != info.Session {
			t.Errorf("sessions: %+v, %v", list, err)
		}
		if _, err := e.ChatSession(ctx, app.ChatSessionRequest{Resume: "../nope"}); err == nil {
			t.Error("resuming a path: no error")
		}
	})
}

// compact drops repeats of a kind in a row (text streams in pieces).
func compact(kinds []string) []string {
	var out []string
	for _, k := range kinds {
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// TestNoAgent: chat without an agent says what to add.
func TestNoAgent(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		if _, err := e.Chat(t.Context(), app.ChatRequest{Text: "hi"}); err == nil || !strings.Contains(err.Error(), "plugin agent") {
			t.Errorf("chat without an agent: %v", err)
		}
	})
}

// TestAudit: the trail has the calls made; following it yields a call
// made after it began, and ends with ctx.
func TestAudit(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		ctx := t.Context()
		if res, err := e.Call(ctx, app.CallRequest{Tool: "mcp__fx__add", Args: []byte(`{"a":1,"b":1}`)}); err != nil || res.Err != nil {
			t.Fatalf("add: %v, %v", res.Err, err)
		}
		e.Call(ctx, app.CallRequest{Tool: "mcp__fx__fail", Args: []byte(`{}`)})
		seq, err := e.Audit(ctx, app.AuditQuery{Tool: "mcp__fx__a*"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rec, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(rec.Line) {
				t.Errorf("line %q", rec.Line)
			}
			got = append(got, rec.Record.Tool+":"+rec.Record.Decision)
		}
		if len(got) != 1 || got[0] != "mcp__fx__add:allow" {
			t.Errorf("the trail of mcp__fx__a*: %q, want the one add", got)
		}

		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		seq, err = e.Audit(fctx, app.AuditQuery{Tool: "mcp__fx__shout", Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		e.Call(ctx, app.CallRequest{Tool: "mcp__fx__shout", Args: []byte(`{"text":"hi"}`)})
		n := 0
		for rec, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if rec.Record.Tool != "mcp__fx__shout" {
				t.Errorf("followed %q", rec.Record.Tool)
			}
			cancel() // the loop ends with ctx
		}
		if n != 1 {
			t.Errorf("followed %d calls, want 1", n)
		}
	})
}

// TestLoginNames: login and logout find the server by serverName or id,
// and name the servers there are when there is none.
func TestLoginNames(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		_, err := e.Logout(t.Context(), app.LoginRequest{Server: "nope"})
		if err == nil || !strings.Contains(err.Error(), `no enabled mcp-client entry with serverName "nope" (it has: [fx broken])`) {
			t.Errorf("logout of nope: %v", err)
		}
		if _, err := e.Login(t.Context(), app.LoginRequest{Server: "fx"}); err == nil {
			t.Error("login with no browser step: no error")
		}
	})
}

// TestCancelReachesTheServer: a caller that gives up mid-call cancels the
// call at its server, attached too (the socket's request ends, and with
// it the host's call).
func TestCancelReachesTheServer(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	composition := fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q, args: [-cancel-file, %q], sandbox: {write: [%q]}}
`, mcptest.FixtureBinary(t), events, filepath.Dir(events))
	count := func(what string) int {
		b, _ := os.ReadFile(events)
		return strings.Count(string(b), what)
	}
	both(t, composition, func(t *testing.T, e *env) {
		started, cancelled := count("slow started"), count("slow cancelled")
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan tools.Result, 1)
		go func() {
			res, _ := e.Call(ctx, app.CallRequest{Tool: "mcp__fx__slow", Args: []byte(`{"ms":600000}`)})
			done <- res
		}()
		mcptest.WaitFor(t, time.Minute, "the call to start", func() bool { return count("slow started") > started })
		cancel()
		if res := <-done; !errors.Is(res.Err, context.Canceled) {
			t.Errorf("the cancelled call: %v", res.Err)
		}
		mcptest.WaitFor(t, time.Minute, "the server to see the cancel", func() bool { return count("slow cancelled") > cancelled })
	})
}

// TestChatCancel: ending ctx while a turn streams ends the turn, on the
// host too: the next turn runs (a stuck one would hold the conversation).
func TestChatCancel(t *testing.T) {
	held := openaitest.Turn{Content: "Once upon a time", Hold: true}
	next := openaitest.Turn{Content: "Next."}
	model := openaitest.New(t, held, next, held, next)
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		res, err := e.Chat(ctx, app.ChatRequest{Text: "tell a story", Events: func(ev app.ChatEvent) {
			if ev.Kind == app.ChatText {
				cancel()
			}
		}})
		if err != nil || !res.Canceled || res.Error == "" {
			t.Errorf("the cancelled turn: %+v, %v; want canceled", res, err)
		}
		res, err = e.Chat(t.Context(), app.ChatRequest{Text: "go on"})
		if err != nil || res.Answer != "Next." {
			t.Errorf("the next turn: %+v, %v", res, err)
		}
	})
}
