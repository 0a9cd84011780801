package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// TestTurnEvents: with Events set, a turn reports each model message (its
// text, calls and usage) and each call's start and outcome, in order, and
// writes no status line for the calls.
func TestTurnEvents(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "Adding.", ToolCalls: []openaitest.ToolCall{
			call("c1", "mcp_call", `{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}}`),
			call("c2", "mcp_call", `not json`),
		}, Usage: &openaitest.Usage{PromptTokens: 10, CompletionTokens: 2}},
		openaitest.Turn{Content: "3."},
	)
	e := start(t, srv, "")
	var o output
	var got []string
	out := o.out()
	out.Events = func(ev Event) {
		switch ev.Kind {
		case EventStep:
			s := fmt.Sprintf("step %q", ev.Text)
			for _, c := range ev.Calls {
				s += fmt.Sprintf(" %s:%s", c.ID, c.Input())
			}
			got = append(got, s+fmt.Sprintf(" %d/%d", ev.Usage.Prompt, ev.Usage.Completion))
		case EventCallStart:
			got = append(got, "start "+ev.Call.ID)
		case EventCallDone:
			got = append(got, fmt.Sprintf("done %s %q %v", ev.Call.ID, ev.Result, ev.Err != nil))
		}
	}
	if _, err := e.agent.Main().Turn(context.Background(), "add", out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`step "Adding." c1:{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}} c2:"not json" 10/2`,
		"start c1", "start c2",
		`done c1 "3" false`,
		`done c2 "Error: the arguments are not valid JSON (invalid character 'o' in literal null (expecting 'u')); send the arguments as one JSON object" true`,
		`step "3." 0/0`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := o.status.String(); strings.Contains(s, "→") || strings.Contains(s, "←") {
		t.Errorf("status lines for the calls beside the events: %q", s)
	}
}
