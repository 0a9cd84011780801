package policy_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// annotatedComposition runs the fixture's annotated (readOnlyHint) and
// log (no hints: it may write) tools, the fold, and policy's entry.
func annotatedComposition(fixture, policy string) string {
	return fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-annotated]
  - id: fold
    name: mcp-fold
    config: {}
%s`, fixture, policy)
}

// recorder answers every ask with answer and keeps the tools it was asked for.
type recorder struct {
	mu     sync.Mutex
	asked  []string
	answer string
}

func (r *recorder) Answer(_ context.Context, req elicit.Request) (elicit.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Approval != nil {
		r.asked = append(r.asked, req.Approval.Tool)
	}
	if r.answer == "" {
		return elicit.Result{Action: elicit.Decline}, nil
	}
	return elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: r.answer}}, nil
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.asked
	r.asked = nil
	return s
}

// TestChatAsksBeforeWrites: with no policy entry, with one that only
// moves the audit trail, and with rules written for other callers, chat
// is asked before the tool that may write (log) and never before the one
// marked readOnlyHint (annotated), directly or through mcp_call; the
// console is not asked at all. A rule written for chat replaces it.
func TestChatAsksBeforeWrites(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	audit := t.TempDir()
	for _, c := range []struct {
		name, policy string
		chatAsks     bool
	}{
		{"no policy entry", "", true},
		{"an audit dir only", fmt.Sprintf("  - id: policy\n    name: policy\n    config:\n      audit: {enabled: true, dir: %q}\n", audit), true},
		{"an allow for every caller", "  - id: policy\n    name: policy\n    config:\n      rules:\n        - tools: [\"mcp__fx__*\"]\n          action: allow\n", true},
		{"rules for the gateway", "  - id: policy\n    name: policy\n    config:\n      rules:\n        - callers: [gateway]\n          action: deny\n", true},
		{"a rule for chat", "  - id: policy\n    name: policy\n    config:\n      rules:\n        - callers: [chat]\n          tools: [\"mcp__fx__annotated\"]\n          action: allow\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hosttest.Start(t, annotatedComposition(fixture, c.policy))
			reg := h.Tools()
			rec := &recorder{answer: elicit.ApproveOnce}
			call := func(kind, name, args string) tools.Result {
				return reg.Run(t.Context(), tools.Call{Caller: tools.Caller{Kind: kind}, Name: name, Args: []byte(args),
					Channels: &tools.Channels{Answerer: rec}})
			}
			for _, k := range []struct{ kind, name, args string }{
				{tools.CallerChat, "mcp__fx__annotated", `{"text":"hi"}`},
				{tools.CallerChat, "mcp_call", `{"tool":"mcp__fx__annotated","arguments":{"text":"hi"}}`},
				{tools.CallerConsole, "mcp__fx__log", `{"text":"hi"}`},
			} {
				if res := call(k.kind, k.name, k.args); res.Err != nil {
					t.Fatalf("%s %s: %v", k.kind, k.name, res.Err)
				}
				if asked := rec.take(); len(asked) > 0 {
					t.Errorf("%s %s: asked for %v, want no ask", k.kind, k.name, asked)
				}
			}
			for _, name := range []string{"mcp__fx__log", "mcp_call"} {
				args := `{"text":"hi"}`
				if name == "mcp_call" {
					args = `{"tool":"mcp__fx__log","arguments":{"text":"hi"}}`
				}
				if res := call(tools.CallerChat, name, args); res.Err != nil {
					t.Fatalf("chat %s: %v", name, res.Err)
				}
				asked := rec.take()
				if c.chatAsks && (len(asked) != 1 || asked[0] != "mcp__fx__log") {
					t.Errorf("chat %s: asked for %v, want one ask for mcp__fx__log", name, asked)
				}
				if !c.chatAsks && len(asked) > 0 {
					t.Errorf("chat %s: asked for %v; a rule for chat replaces the built-in ask", name, asked)
				}
			}
			// A "no" is a denial naming the built-in rule, which Explain names too.
			rec.answer = ""
			res := call(tools.CallerChat, "mcp__fx__log", `{"text":"hi"}`)
			if c.chatAsks {
				if res.Err == nil || !strings.Contains(res.Err.Error(), rules.ChatRule) {
					t.Errorf("declined: %v, want a denial naming %q", res.Err, rules.ChatRule)
				}
			} else if res.Err != nil {
				t.Errorf("declined, with a rule for chat: %v, want the call to run unasked", res.Err)
			}
		})
	}
}

// TestChatOneShotDeniesWithoutYes: chat -p (a one-shot caller) without
// --yes is refused the writing tool with a hint to pass --yes, and runs
// it with --yes; the read-only tool runs either way.
func TestChatOneShotDeniesWithoutYes(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir()) // no web console's broker here
	h := hosttest.Start(t, annotatedComposition(mcptest.FixtureBinary(t), ""))
	reg := h.Tools()
	for _, yes := range []bool{false, true} {
		call := func(name string) tools.Result {
			return reg.Run(t.Context(), tools.Call{Caller: tools.Caller{Kind: tools.CallerChat}, Name: name, Args: []byte(`{"text":"hi"}`),
				Channels: &tools.Channels{OneShot: &tools.OneShot{Yes: yes}}})
		}
		if res := call("mcp__fx__annotated"); res.Err != nil {
			t.Errorf("--yes=%v: the read-only tool: %v", yes, res.Err)
		}
		res := call("mcp__fx__log")
		switch {
		case yes && res.Err != nil:
			t.Errorf("--yes: %v, want the call to run", res.Err)
		case !yes && (res.Err == nil || !strings.Contains(res.Err.Error(), "--yes")):
			t.Errorf("without --yes: %v, want a denial that says --yes", res.Err)
		}
	}
}
