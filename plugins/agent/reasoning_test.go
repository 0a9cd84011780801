package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
)

// sendReasoning is the config of an agent that sends the reasoning back,
// as auto does for DeepSeek's API (the scripted server is on 127.0.0.1).
const sendReasoning = "      reasoningContent: send\n"

const addArgs = `{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}}`

// toolTurn is a thinking model's tool-calling turn: a call, then the
// answer, each with its reasoning.
func toolTurn(n string) []openaitest.Turn {
	return []openaitest.Turn{
		{Reasoning: "R-call-" + n, Content: "Let me add.", ToolCalls: []openaitest.ToolCall{call("call_"+n, "mcp_call", addArgs)}},
		{Reasoning: "R-answer-" + n, Content: "The sum is 3."},
	}
}

// sentReasoning returns the reasoning_content of each assistant message of
// request i ("-" for none), and its thinking field.
func sentReasoning(t *testing.T, srv *openaitest.Server, i int) ([]string, string) {
	t.Helper()
	var out []string
	for _, m := range messages(t, srv, i) {
		if m.Role != "assistant" {
			continue
		}
		var f struct {
			R *string `json:"reasoning_content"`
		}
		_ = json.Unmarshal(m.Raw, &f)
		if f.R == nil {
			out = append(out, "-")
		} else {
			out = append(out, *f.R)
		}
	}
	return out, string(srv.Requests()[i].Field("thinking"))
}

func turnOK(t *testing.T, c *Conversation, text string, o *output) Result {
	t.Helper()
	res, err := c.Turn(context.Background(), text, o.out())
	if err != nil {
		t.Fatalf("turn %q: %v\nstatus:\n%s", text, err, o.status.String())
	}
	return res
}

// TestReasoningSentBack: against a model held to DeepSeek's thinking-mode
// rule, the second step of a tool-calling turn carries the first step's
// reasoning, and later turns carry that turn's; the reasoning of a turn
// without tool calls (ignored by the API) is not kept.
func TestReasoningSentBack(t *testing.T) {
	srv := openaitest.New(t, toolTurn("1")...)
	srv.Push(openaitest.Turn{Reasoning: "R-plain", Content: "Hello."})
	srv.Push(openaitest.Turn{Reasoning: "R-3", Content: "Bye."})
	srv.ThinkingModels("deepseek-flash")
	e := start(t, srv, sendReasoning)
	c := e.agent.Main()
	var o output
	turnOK(t, c, "What is 1+2?", &o)
	turnOK(t, c, "Hi.", &o)
	turnOK(t, c, "Bye.", &o)
	want := [][]string{nil, {"R-call-1"}, {"R-call-1", "R-answer-1"}, {"R-call-1", "R-answer-1", "-"}}
	for i, w := range want {
		got, thinking := sentReasoning(t, srv, i)
		if strings.Join(got, "|") != strings.Join(w, "|") || thinking != "" {
			t.Errorf("request %d: reasoning %q, thinking %s; want %q and no thinking field", i, got, thinking, w)
		}
	}
	if strings.Contains(o.status.String(), "thinking is off") {
		t.Errorf("status:\n%s", o.status.String())
	}
}

// TestReasoningSessionRoundTrip: the reasoning is in the session file, and
// a resumed conversation sends the history byte for byte as the one that
// saved it.
func TestReasoningSessionRoundTrip(t *testing.T) {
	turns := toolTurn("1")
	turns[1].Reasoning = "R-answer-1 <é&>\u2028\n\"quoted\""
	srv := openaitest.New(t, turns...)
	srv.ThinkingModels("deepseek-flash")
	e := start(t, srv, sendReasoning)
	dir := t.TempDir()
	s, err := sessions.New(dir, "/c.yml", e.agent.Model())
	if err != nil {
		t.Fatal(err)
	}
	c := e.agent.Main()
	c.Record(s)
	var o output
	turnOK(t, c, "What is 1+2? <&>", &o)
	b, _ := os.ReadFile(s.Path)
	if !bytes.Contains(b, []byte(`"reasoning_content":"R-call-1"`)) || !bytes.Contains(b, []byte(`"reasoning_content":"R-answer-1 \u003cé\u0026\u003e\u2028\n\"quoted\""`)) {
		t.Fatalf("the session does not hold the reasoning:\n%s", b)
	}
	ls, err := sessions.Open(dir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	resumed := e.agent.NewConversation()
	if err := resumed.Resume(ls); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h1, _ := c.snapshot()
	h2, _ := resumed.snapshot()
	r1, err1 := e.agent.prepare(ctx, h1, nil)
	r2, err2 := e.agent.prepare(ctx, h2, nil)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !bytes.Equal(r1.body, r2.body) {
		t.Errorf("the resumed request differs:\n%s\nwant:\n%s", r2.body, r1.body)
	}
	srv.Push(openaitest.Turn{Reasoning: "R-2", Content: "Again."})
	turnOK(t, resumed, "Again?", &o)
	if got, thinking := sentReasoning(t, srv, 2); strings.Join(got, "|") != "R-call-1|"+turns[1].Reasoning || thinking != "" {
		t.Errorf("after resume: reasoning %q, thinking %s", got, thinking)
	}
}

// TestReasoningMissingTurnsThinkingOff: history with a tool-calling turn
// and no reasoning — a session saved before the reasoning was kept, turns
// of a model that does not think before a /model switch — goes with
// thinking off instead of meeting DeepSeek's 400; /new brings it back.
func TestReasoningMissingTurnsThinkingOff(t *testing.T) {
	t.Run("old session", func(t *testing.T) {
		srv := openaitest.New(t, openaitest.Turn{Reasoning: "R-new", Content: "Still 3."})
		srv.ThinkingModels("deepseek-flash")
		e := start(t, srv, sendReasoning)
		dir := t.TempDir()
		s, err := sessions.New(dir, "/c.yml", "deepseek-chat")
		if err != nil {
			t.Fatal(err)
		}
		// As sessions were saved before: no reasoning on the call.
		if err := s.AppendTurn(context.Background(), nil, "deepseek-chat", Usage{}, sessionTurn(0, "3")); err != nil {
			t.Fatal(err)
		}
		ls, err := sessions.Open(dir, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		c := e.agent.Main()
		if err := c.Resume(ls); err != nil {
			t.Fatal(err)
		}
		var o output
		res := turnOK(t, c, "And now?", &o)
		if _, thinking := sentReasoning(t, srv, 0); thinking != `{"type":"disabled"}` || res.Answer != "Still 3." {
			t.Errorf("thinking = %s, answer %q", thinking, res.Answer)
		}
		if !strings.Contains(o.status.String(), "thinking is off for this request") {
			t.Errorf("status does not say thinking is off:\n%s", o.status.String())
		}
		// Said once a conversation, not at every turn.
		srv.Push(openaitest.Turn{Content: "Yes."})
		turnOK(t, c, "Sure?", &o)
		if n := strings.Count(o.status.String(), "thinking is off"); n != 1 {
			t.Errorf("said %d times:\n%s", n, o.status.String())
		}
	})
	t.Run("model switch", func(t *testing.T) {
		srv := openaitest.New(t,
			openaitest.Turn{Content: "Let me add.", ToolCalls: []openaitest.ToolCall{call("call_1", "mcp_call", addArgs)}},
			openaitest.Turn{Content: "The sum is 3."},
		)
		srv.ThinkingModels("deepseek-v4-pro")
		e := start(t, srv, sendReasoning+"      model: plain-model\n")
		c := e.agent.Main()
		var o output
		turnOK(t, c, "What is 1+2?", &o)
		e.agent.SetModel("deepseek-v4-pro")
		srv.Push(toolTurn("2")...)
		turnOK(t, c, "And 1+2 again?", &o)
		for i := 2; i < 4; i++ {
			if _, thinking := sentReasoning(t, srv, i); thinking != `{"type":"disabled"}` {
				t.Errorf("request %d: thinking = %s, want disabled", i, thinking)
			}
		}
		// A new conversation has no such turn: thinking is on again.
		c.Reset()
		srv.Push(toolTurn("3")...)
		turnOK(t, c, "Once more?", &o)
		if got, thinking := sentReasoning(t, srv, 5); thinking != "" || strings.Join(got, "|") != "R-call-3" {
			t.Errorf("after /new: reasoning %q, thinking %s", got, thinking)
		}
	})
}

// TestReasoningAfterCompact: /compact replaces the earlier turns by a
// summary pair and keeps the last turn with its reasoning, so the next
// request keeps thinking on and is taken.
func TestReasoningAfterCompact(t *testing.T) {
	srv := openaitest.New(t, toolTurn("1")...)
	srv.Push(toolTurn("2")...)
	srv.Push(openaitest.Turn{Reasoning: "R-sum", Content: "SUMMARY"})
	srv.ThinkingModels("deepseek-flash")
	e := start(t, srv, sendReasoning)
	c := e.agent.Main()
	var o output
	turnOK(t, c, "What is 1+2?", &o)
	turnOK(t, c, "And again?", &o)
	if n, _, err := c.Compact(context.Background(), o.out()); err != nil || n != 4 {
		t.Fatalf("compact: %d messages, %v", n, err)
	}
	srv.Push(openaitest.Turn{Reasoning: "R-5", Content: "Done."})
	turnOK(t, c, "Thanks.", &o)
	last := len(srv.Requests()) - 1
	got, thinking := sentReasoning(t, srv, last)
	if strings.Join(got, "|") != "-|R-call-2|R-answer-2" || thinking != "" {
		t.Errorf("after /compact: reasoning %q (summary ack, last turn), thinking %s", got, thinking)
	}
}

// TestReasoningOmit: for an API that refuses the field (omit, and auto
// off DeepSeek's API) no reasoning goes back, not even from a session that
// holds it.
func TestReasoningOmit(t *testing.T) {
	for base, want := range map[string]bool{"https://api.deepseek.com": true, "https://api.deepseek.com/v1": true, "https://api.openai.com/v1": false, "http://127.0.0.1:8080": false} {
		if got := sendsReasoning(config{BaseURL: base, ReasoningContent: reasoningAuto}); got != want {
			t.Errorf("auto at %s: send = %v", base, got)
		}
	}
	srv := openaitest.New(t, toolTurn("1")...)
	e := start(t, srv, sendReasoning)
	dir := t.TempDir()
	s, _ := sessions.New(dir, "/c.yml", "m")
	e.agent.Main().Record(s)
	var o output
	turnOK(t, e.agent.Main(), "What is 1+2?", &o)

	srv2 := openaitest.New(t, openaitest.Turn{Reasoning: "R", Content: "ok", ToolCalls: []openaitest.ToolCall{call("c2", "mcp_call", addArgs)}}, openaitest.Turn{Reasoning: "R2", Content: "3"})
	e2 := start(t, srv2, "      reasoningContent: omit\n")
	ls, err := sessions.Open(dir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.agent.Main().Resume(ls); err != nil {
		t.Fatal(err)
	}
	turnOK(t, e2.agent.Main(), "Again?", &o)
	for i := range 2 {
		if bytes.Contains(srv2.Requests()[i].Body, []byte("reasoning_content")) || srv2.Requests()[i].Field("thinking") != nil {
			t.Errorf("request %d sends reasoning or thinking:\n%s", i, srv2.Requests()[i].Body)
		}
	}
}

// TestModelConfig: the default model is DeepSeek's current one, a retired
// name on DeepSeek's API is refused naming its successor (in the config and
// by /model), and a bad reasoningContent is named.
func TestModelConfig(t *testing.T) {
	if d := defaults(); d.Model != "deepseek-flash" || knownWindow(d.Model) != 1_000_000 || knownWindow("deepseek-v4-pro") != 1_000_000 || knownWindow("other") != defaultWindow {
		t.Errorf("defaults: %+v", d)
	}
	c := defaults()
	c.Model, c.ReasoningContent = "deepseek-reasoner", "sometimes"
	err := validate(&c)
	if err == nil || !strings.Contains(err.Error(), "model: deepseek-reasoner was retired by DeepSeek on 2026-07-24; use deepseek-flash") ||
		!strings.Contains(err.Error(), `reasoningContent: "sometimes" is not a choice`) {
		t.Errorf("validate = %v", err)
	}
	// Elsewhere the name may be a server's own.
	c = defaults()
	c.Model, c.BaseURL = "deepseek-chat", "http://127.0.0.1:8080/v1"
	if err := validate(&c); err != nil {
		t.Errorf("deepseek-chat on another server: %v", err)
	}
	if got := describe("deepseek-v4-pro"); !strings.Contains(got, "1M-token context") || !strings.Contains(got, "$1.32 input, $0.044 cached, $3.96 output") {
		t.Errorf("describe = %q", got)
	}
}

// TestReasoningAutoHostForms: auto sends the reasoning to DeepSeek's API
// however its host is written (DNS names are case-insensitive, and a
// trailing dot names the same host), or thinking mode's second step is a
// 400; the retired names are refused there too.
func TestReasoningAutoHostForms(t *testing.T) {
	for _, base := range []string{"https://API.DeepSeek.com", "https://api.deepseek.com./v1", "HTTPS://Api.Deepseek.COM:443/"} {
		if !sendsReasoning(config{BaseURL: base, ReasoningContent: reasoningAuto}) {
			t.Errorf("auto at %s: reasoning not sent", base)
		}
		if retiredModel("deepseek-chat", base) == nil {
			t.Errorf("deepseek-chat at %s: not refused as retired", base)
		}
	}
	for _, base := range []string{"https://api.deepseek.com.evil.example", "https://notapi.deepseek.com"} {
		if sendsReasoning(config{BaseURL: base, ReasoningContent: reasoningAuto}) {
			t.Errorf("auto at %s: reasoning sent to another host", base)
		}
	}
}
