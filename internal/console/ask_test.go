package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// flowComposition is the fixture with its progress and elicitation tools.
func flowComposition(t *testing.T) string {
	return fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
      args: [-progress, -elicit]
`, mcptest.FixtureBinary(t))
}

// askAtConsole runs the console on a pipe: it types command, waits for
// the server's question (lines typed before it are dropped), then types
// answers and ends the input. It returns the console's output.
func askAtConsole(t *testing.T, h *host.Host, command, answers string) string {
	t.Helper()
	return askOn(t, &app.Local{Host: h}, command, answers)
}

// askOn is askAtConsole on a.
func askOn(t *testing.T, a app.App, command, answers string) string {
	t.Helper()
	in, typed := io.Pipe()
	var out mcptest.SyncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(context.Background(), a, in, &out, nil, Hooks{})
	}()
	defer func() { typed.Close(); <-done }()
	fmt.Fprintln(typed, command)
	mcptest.WaitFor(t, 30*time.Second, "the question", func() bool { return strings.Contains(out.String(), " asks: ") })
	io.WriteString(typed, answers)
	typed.Close()
	<-done
	return out.String()
}

func TestConsoleAnswersElicitation(t *testing.T) {
	h := startTestHost(t, flowComposition(t))
	opened := filepath.Join(t.TempDir(), "opened")
	browser := filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\necho \"$1\" >> "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", browser)
	tests := []struct {
		name, command, answers string
		want                   []string
	}{
		{"a form, with retries and defaults", "/call mcp__demo__ask",
			"\nAda\nGreen\n2\n12\n\n",
			[]string{"demo asks: Tell me about you", "Your name (required): ", "this answer is required",
				"1) Red [r]", "2) Blue [b]", `"Green" is not one of the choices`, "count (whole number, 1 to 9) [3]: ", "want at most 9",
				`{"action":"accept","content":{"color":"b","count":3,"name":"Ada"}}`}},
		{"declined", "/call mcp__demo__ask", "/decline\n", []string{`{"action":"decline"}`}},
		{"cancelled", "/call mcp__demo__ask", "Ada\n/cancel\n", []string{`{"action":"cancel"}`}},
		{"a URL opened with $BROWSER once agreed", `/call mcp__demo__ask-url {"url":"https://example.com/login"}`, "y\nmaybe\ny\n",
			[]string{"demo asks: Please sign in", "https://example.com/login\n  on example.com\n  Open it? [y/N]: ", "opened in your browser", `{"action":"accept"}`}},
		{"a URL not agreed to is declined, and not opened", `/call mcp__demo__ask-url {"url":"https://example.net/not-opened"}`, "\n",
			[]string{"on example.net", "Open it? [y/N]: ", `{"action":"decline"}`}},
		{"the input ends during a form", "/call mcp__demo__ask", "", []string{`"action":"cancel"`, "the console's input ended"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := askAtConsole(t, h, tt.command, tt.answers)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// Only the URL agreed to was opened.
	mcptest.WaitFor(t, 10*time.Second, "the browser script", func() bool {
		b, _ := os.ReadFile(opened)
		return string(b) == "https://example.com/login\n"
	})
}

// feedLines returns a line source fed from a pipe: what is written to
// typed arrives as typed lines. Feeding ends with the test.
func feedLines(t *testing.T) (lines *lineSource, typed *io.PipeWriter) {
	lines = newLineSource()
	in, typed := io.Pipe()
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() { defer close(fed); lines.feed(in, stop) }()
	t.Cleanup(func() { close(stop); typed.Close(); <-fed })
	return lines, typed
}

// TestQuestionDropsTypeAhead: a line typed before a question starts is
// not taken as its answer.
func TestQuestionDropsTypeAhead(t *testing.T) {
	lines, typed := feedLines(t)
	fmt.Fprintln(typed, "typed ahead")
	mcptest.WaitFor(t, 10*time.Second, "the line queued", func() bool {
		lines.mu.Lock()
		defer lines.mu.Unlock()
		return len(lines.queue) == 1
	})
	var out mcptest.SyncBuffer
	asker := &asker{out: &out, lines: lines}
	type answer struct {
		res elicit.Result
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := asker.Answer(context.Background(), elicit.Request{Server: "demo", Mode: elicit.ModeForm, Message: "Name?",
			Form: &elicit.Form{Fields: []elicit.Field{{Name: "name", Type: "string", Required: true}}}})
		got <- answer{res, err}
	}()
	mcptest.WaitFor(t, 10*time.Second, "the question", func() bool { return strings.Contains(out.String(), "name (required): ") })
	fmt.Fprintln(typed, "typed after")
	a := <-got
	if a.err != nil || a.res.Content["name"] != "typed after" {
		t.Errorf("answer = %+v, %v; want the line typed after the question", a.res, a.err)
	}
	if !strings.Contains(out.String(), "(1 line(s) typed before this question were dropped)") {
		t.Errorf("the drop is not said: %q", out.String())
	}
}

// TestLineSourceIsBounded: feed stops reading once maxQueuedLines wait,
// and every line still comes, in order.
func TestLineSourceIsBounded(t *testing.T) {
	lines, typed := feedLines(t)
	const n = 3 * maxQueuedLines
	go func() {
		for i := range n {
			if _, err := fmt.Fprintf(typed, "line %d\n", i); err != nil {
				return
			}
		}
		typed.Close()
	}()
	mcptest.WaitFor(t, 10*time.Second, "feed to wait for a full queue", func() bool {
		lines.mu.Lock()
		defer lines.mu.Unlock()
		if len(lines.queue) > maxQueuedLines {
			t.Fatalf("%d lines queued, more than %d", len(lines.queue), maxQueuedLines)
		}
		return lines.full
	})
	for i := range n {
		line, ok := lines.next(context.Background(), false)
		if want := fmt.Sprintf("line %d", i); !ok || line != want {
			t.Fatalf("line %d = %q, %v; want %q", i, line, ok, want)
		}
	}
	if _, ok := lines.next(context.Background(), false); ok {
		t.Error("a line after the end of the input")
	}
}

func TestConsoleProgressLine(t *testing.T) {
	h := startTestHost(t, flowComposition(t))
	var out, term bytes.Buffer
	Run(context.Background(), &app.Local{Host: h}, strings.NewReader("/call mcp__demo__progress {\"steps\":3,\"ms\":20}\n"), &out, &term, Hooks{})
	if !strings.Contains(out.String(), "done after 3 steps") {
		t.Errorf("output: %q", out.String())
	}
	// The last report may come after the result (see mcpclient's
	// TestProgressResetsTheSilenceTimeout), so only the first two count.
	line := term.String()
	for _, w := range []string{"\r\x1b[Kmcp__demo__progress: 1/3 (33%) step 1 of 3", "\r\x1b[Kmcp__demo__progress: 2/3 (66%) step 2 of 3"} {
		if !strings.Contains(line, w) {
			t.Errorf("the terminal lacks %q: %q", w, line)
		}
	}
	if !strings.HasSuffix(line, "\r\x1b[K") || strings.Contains(out.String(), "\r") {
		t.Errorf("the progress line is not erased at the end, or went to the console's output: %q", line)
	}
}

func TestConsoleAnswersServerEverything(t *testing.T) {
	node, argv := mcptest.NodeServer(t, mcptest.ServerEverything, "stdio")
	args, _ := json.Marshal(argv)
	h := startTestHost(t, fmt.Sprintf(`plugins:
  - id: ev
    name: mcp-client
    config:
      serverName: ev
      transport: stdio
      command: %q
      args: %s
`, node, args))
	tool := "mcp__ev__trigger-elicitation-request"
	reg, _ := host.Lookup(h, tools.Key)
	// Offered once the host declared elicitation (after initialize).
	console := tools.Caller{Kind: tools.CallerConsole}
	mcptest.WaitFor(t, 30*time.Second, tool, func() bool { _, ok := reg.Lookup(console, tool); return ok })
	// The fields come required first, then by name.
	answers := []string{
		"Ada Lovelace",    // name
		"10/12/1815",      // birthdate: refused, then
		"1815-12-10",      //   accepted
		"y",               // check
		"ada@example.com", // email
		"",                // firstLine: its default
		"",                // homepage: optional, left out
		"7",               // integer
		"Dogs",            // legacyTitledEnum, by its enumNames title
		"",                // number: its default
		"Tuna, 3",         // titledMultipleSelectEnum, by title and number
		"3",               // titledSingleSelectEnum: Wonder Woman
		"Piano",           // untitledMultipleSelectEnum
		"",                // untitledSingleSelectEnum: its default
	}
	out := askAtConsole(t, h, "/call "+tool, strings.Join(answers, "\n")+"\n")
	for _, w := range []string{"ev asks: Please provide inputs", "want a date as YYYY-MM-DD", "1) Superman [hero-1]",
		"User provided the requested information", "Name: Ada Lovelace", "Agreed to terms: true", "Email: ada@example.com",
		"Birthdate: 1815-12-10", "Favorite Integer: 7", "Favorite Number: 3.14", `"legacyTitledEnum": "pet-2"`,
		`"titledSingleSelectEnum": "hero-3"`, `"firstLine": "It was a dark and stormy night."`, `"untitledSingleSelectEnum": "Monica"`} {
		if !strings.Contains(out, w) {
			t.Errorf("console output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "homepage") {
		t.Errorf("the optional field left empty was sent:\n%s", out)
	}
}
