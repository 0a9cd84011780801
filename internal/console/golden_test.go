package console

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/golden"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestConsoleGolden: what the console prints for a scripted session, byte
// for byte (/status is left out: its SINCE column is the clock's).
func TestConsoleGolden(t *testing.T) {
	h := startTestHost(t, mcptest.ConsoleComposition(t))
	var out bytes.Buffer
	runConsole(context.Background(), h, strings.NewReader(goldenSession), &out)
	golden.Check(t, "console_session", out.Bytes(), *update)
}

var goldenSession = strings.Join([]string{"/help", "/tools", "/prompt", `/call greet {"name":"Ada"}`, `/call mcp__demo__add {"a":1,"b":2}`,
	"/call greet [1]", "/call nope", "/call", "/mcp list demo", "/nope", "hello", "", "/quit", "/status"}, "\n") + "\n"

// TestConsoleGoldenAttached: the console on a running host, through its
// control socket, prints the same session byte for byte, and a server's
// form asked during its call comes to it over the socket.
func TestConsoleGoldenAttached(t *testing.T) {
	h := startTestHost(t, mcptest.ConsoleComposition(t))
	var out bytes.Buffer
	Run(context.Background(), attach(t, h), strings.NewReader(goldenSession), &out, nil, Hooks{})
	golden.Check(t, "console_session", out.Bytes(), false)

	flow := startTestHost(t, flowComposition(t))
	golden.Check(t, "console_form", []byte(askOn(t, attach(t, flow), "/call mcp__demo__ask", "\nAda\nGreen\n2\n12\n\n")), false)
}

// TestConsoleFormGolden: a server's form asked at the console, with a
// required answer left empty, a wrong choice, a bound crossed and defaults.
func TestConsoleFormGolden(t *testing.T) {
	h := startTestHost(t, flowComposition(t))
	for _, tt := range []struct{ name, command, answers string }{
		{"console_form", "/call mcp__demo__ask", "\nAda\nGreen\n2\n12\n\n"},
		{"console_form_declined", "/call mcp__demo__ask", "/decline\n"},
		{"console_url_declined", `/call mcp__demo__ask-url {"url":"https://example.net/not-opened"}`, "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			golden.Check(t, tt.name, []byte(askOn(t, &app.Local{Host: h}, tt.command, tt.answers)), *update)
		})
	}
}

// TestApprovalGolden: the policy's question, answered by fed lines (a
// script's), after one that is not an answer.
func TestApprovalGolden(t *testing.T) {
	lines := newLineSource()
	stop := make(chan struct{})
	defer close(stop)
	lines.feed(strings.NewReader("maybe\ns\n"), stop)
	var out bytes.Buffer
	a := &asker{out: &out, lines: lines, fedAnswers: true}
	res, err := a.Answer(context.Background(), elicit.Request{Server: "fx", Approval: &elicit.Approval{
		Rule: "rules[0] \x1b[31m", Tool: "mcp__fx__count", Args: []byte(`{"n":"\u001b]0;x\u0007"}`),
		Choices: []string{elicit.ApproveOnce, elicit.ApproveSession, elicit.ApproveAlways}}})
	if err != nil || res.Action != elicit.Accept || res.Content[elicit.ApprovalField] != elicit.ApproveSession {
		t.Fatalf("answer = %+v, %v", res, err)
	}
	golden.Check(t, "approval", out.Bytes(), *update)
}

// TestProgressLineGolden: the live line's reports, a long message cut to
// the width, and its erasure.
func TestProgressLineGolden(t *testing.T) {
	var term bytes.Buffer
	l := NewProgressLine(&term, "mcp__demo__progress")
	l.Report(tools.Progress{Progress: 1, Total: 3, Message: "step\n1 \x1b[2J"})
	l.Report(tools.Progress{Progress: 2.5})
	l.Report(tools.Progress{Progress: 3, Total: 3, Message: strings.Repeat("long ", 30)})
	l.Clear()
	l.Clear()
	golden.Check(t, "progress_line", term.Bytes(), *update)
}

// TestRenderGolden: the tables the console and the one-shot commands share.
func TestRenderGolden(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.Local)
	var out bytes.Buffer
	WriteInstances(&out, []host.InstanceStatus{
		{ID: "demo", Plugin: "mcp-client", State: host.StateActive, Since: now.Add(-3 * time.Second), Detail: "connected; 12 tools"},
		{ID: "web", Plugin: "mcp-client", State: host.StateFailed, Since: now.Add(-time.Minute), Err: "dial tcp: refused\nsecond line", Kept: "kept the previous config"},
		{ID: "off", Plugin: "greeter", State: host.StateDisabled},
	}, map[string]int{"demo": 12}, now)
	WriteTools(&out, []Tool{
		{Name: "greet", Description: "Greets.\nMore."},
		{Name: "mcp__demo__add", Server: "demo", RawName: "add", Folded: true, Description: "Adds two numbers"},
		{Name: "mcp__demo__rm", Server: "demo", RawName: "rm", Withheld: true, Hidden: "an instruction in a tag"},
	})
	WriteTools(&out, nil)
	WriteContent(&out, []tools.Content{{Type: "text", Text: "no newline"}, {Type: "text", Text: "line\n"}, {Type: "audio"}})
	golden.Check(t, "render", out.Bytes(), *update)
}

// TestApprovalPreviewGolden: a tool's preview (an edit's diff) is shown
// before the question, each line escaped, cut after previewLines.
func TestApprovalPreviewGolden(t *testing.T) {
	lines := newLineSource()
	stop := make(chan struct{})
	defer close(stop)
	lines.feed(strings.NewReader("n\n"), stop)
	var out bytes.Buffer
	a := &asker{out: &out, lines: lines, fedAnswers: true}
	var diff strings.Builder
	diff.WriteString("--- a.go\n+++ a.go\n@@ -1,2 +1,2 @@\n-\treturn 1\n+\treturn 42 \x1b[2J\n")
	for i := range previewLines {
		fmt.Fprintf(&diff, "+line %d\n", i)
	}
	res, err := a.Answer(context.Background(), elicit.Request{Approval: &elicit.Approval{
		Rule: "chat's default", Tool: "edit", Args: []byte(`{"path":"a.go"}`), Preview: diff.String(),
		Choices: []string{elicit.ApproveOnce}}})
	if err != nil || res.Action == elicit.Accept {
		t.Fatalf("answer = %+v, %v", res, err)
	}
	golden.Check(t, "approval_preview", out.Bytes(), *update)
}
