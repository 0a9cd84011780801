package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// askComposition is the fixture's count tool under a policy that asks
// before every call of it (and the fold, so that mcp_call reaches it).
func askComposition(t *testing.T, extra string) string {
	return fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-counter]
  - id: fold
    name: mcp-fold
  - id: policy
    name: policy
    config:
      rules:
        - tools: ["mcp__fx__count", "mcp__fx__ping", "mcp__fx__shout"]
          action: ask
%s`, mcptest.FixtureBinary(t), extra)
}

// script types each line into the console once the output holds its
// cue ("" types at once), then ends the input; it returns the output.
type step struct{ cue, line string }

func consoleScript(t *testing.T, run func(in io.Reader, out io.Writer), steps ...step) string {
	t.Helper()
	in, typed := io.Pipe()
	var out mcptest.SyncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(in, &out)
	}()
	defer func() { typed.Close(); <-done }()
	seen := map[string]int{} // a cue must appear anew, past what an earlier step saw
	for _, s := range steps {
		if s.cue != "" {
			deadline := time.Now().Add(60 * time.Second)
			for strings.Count(out.String(), s.cue) <= seen[s.cue] {
				if time.Now().After(deadline) {
					t.Fatalf("no %q in the output:\n%s", s.cue, out.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			seen[s.cue] = strings.Count(out.String(), s.cue)
		}
		fmt.Fprintln(typed, s.line)
	}
	typed.Close()
	<-done
	return out.String()
}

// TestConsoleAsksBeforeACall: the console asks `Allow TOOL {args}?` with
// the arguments escaped; no refuses (the server never sees the call), yes
// once asks again next time, session does not, always is saved in the
// settings, where /policy shows it and /policy forget removes it.
func TestConsoleAsksBeforeACall(t *testing.T) {
	h := startTestHost(t, askComposition(t, ""))
	run := func(in io.Reader, out io.Writer) { runConsole(context.Background(), h, in, out) }
	const ask = "? [y]es once / [s]ession / [a]lways / [n]o: "
	got := consoleScript(t, run,
		// A valid argument with a terminal escape (shout's text: the
		// registry refuses arguments its schema does not have).
		step{"", `/call mcp__fx__shout {"text":"\u001b[31mred"}`},
		step{ask, "n"},
		step{"", "/call mcp__fx__count"},
		step{ask, "y"},
		step{"", "/call mcp__fx__count"},
		step{ask, "s"},
		step{"", "/call mcp__fx__count"}, // the session's approval: not asked
		step{"\n3\n", "/call mcp_call {\"tool\":\"mcp__fx__count\"}"}, // folded: the same caller, approved
		step{"\n4\n", "/call mcp__fx__ping"},
		step{ask, "a"},
		step{"pong", "/call mcp__fx__ping"}, // always: not asked
		step{"pong", ""},
	)
	if strings.Contains(got, "\x1b") {
		t.Errorf("a terminal escape reached the console:\n%q", got)
	}
	for _, want := range []string{
		`Allow mcp__fx__shout {"text":"\u001b[31mred"}` + ask,
		"(policy rule 1 (composition.yml:15))",
		"Allow mcp__fx__ping {}" + ask,
		"not approved",
		"[n]o: 1\n", "[n]o: 2\n", "\n3\n", "\n4\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the console's output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, ask); n != 4 {
		t.Errorf("asked %d times, want 4 (none under the session's or always approval):\n%s", n, got)
	}
	settingsText, err := os.ReadFile(filepath.Join(os.Getenv("DSH_HOME"), "settings.yaml"))
	if err != nil || !strings.Contains(string(settingsText), "mcp__fx__ping") {
		t.Fatalf("settings.yaml (%v):\n%s\nwant the always approval", err, settingsText)
	}
	got = consoleScript(t, run, step{"", "/policy"}, step{"always approved", "/policy forget mcp__fx__ping"}, step{"forgot", ""})
	if !strings.Contains(got, "always approved (settings section policy.allow): mcp__fx__ping") {
		t.Errorf("/policy:\n%s", got)
	}
	settingsText, _ = os.ReadFile(filepath.Join(os.Getenv("DSH_HOME"), "settings.yaml"))
	if strings.Contains(string(settingsText), "mcp__fx__ping") {
		t.Errorf("/policy forget left the approval in settings.yaml:\n%s", settingsText)
	}
}

// TestCallYes: a one-shot call where the policy asks is denied naming
// --yes, and runs with it.
func TestCallYes(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, askComposition(t, ""))
	call := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := dispatch(context.Background(), append([]string{"call", "-c", file, "--no-attach", "mcp__fx__count"}, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	if code, out, errOut := call(); code != exitFail || !strings.Contains(errOut, "pass --yes to allow it") {
		t.Errorf("without --yes: exit %d, %q %q; want a denial naming --yes", code, out, errOut)
	}
	if code, out, errOut := call("--yes"); code != exitOK || strings.TrimSpace(out) != "1" {
		t.Errorf("--yes: exit %d, %q %q; want the server's first call", code, out, errOut)
	}
}

// TestChatAsksBeforeACall: in chat, the model's call is asked at the
// console; a no reaches the model as the denial.
func TestChatAsksBeforeACall(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "mcp_call", Arguments: `{"tool":"mcp__fx__count","arguments":{}}`}}},
		openaitest.Turn{Content: "Counted."},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c2", Name: "mcp_call", Arguments: `{"tool":"mcp__fx__count","arguments":{}}`}}},
		openaitest.Turn{Content: "Refused."},
	)
	t.Setenv("CHAT_TEST_KEY", "sk-chat-test")
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, askComposition(t, fmt.Sprintf(`  - id: agent
    name: agent
    config:
      baseUrl: %s
      apiKeyEnv: CHAT_TEST_KEY
`, srv.URL)))
	run := func(in io.Reader, out io.Writer) {
		runChat(context.Background(), []string{"-c", file}, Stdio{In: in, Out: out, Err: out}, make(chan os.Signal), func(bool) {})
	}
	const ask = "Allow mcp__fx__count {}? [y]es once / [s]ession / [a]lways / [n]o: "
	got := consoleScript(t, run,
		step{"chatting with", "Count once."},
		step{ask, "y"},
		step{"Counted.", "Count again."},
		step{ask, "n"},
		step{"Refused.", "/quit"},
	)
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4; output:\n%s", len(reqs), got)
	}
	if body := string(reqs[1].Body); !strings.Contains(body, `1`) {
		t.Errorf("the model did not get the count: %s", body)
	}
	if body := string(reqs[3].Body); !strings.Contains(body, "not approved") {
		t.Errorf("the model did not get the denial: %s", body)
	}
}

// TestFoldedCallAskedOnce: under default: ask, a folded call is one
// question (mcp_call's, which names the tool and its arguments), not a
// second one for the tool it calls; the next folded call is asked again.
func TestFoldedCallAskedOnce(t *testing.T) {
	h := startTestHost(t, fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-counter]
  - id: fold
    name: mcp-fold
  - id: policy
    name: policy
    config:
      default: ask
      audit: {enabled: false}
`, mcptest.FixtureBinary(t)))
	run := func(in io.Reader, out io.Writer) { runConsole(context.Background(), h, in, out) }
	const ask = "? [y]es once / [s]ession / [a]lways / [n]o: "
	got := consoleScript(t, run,
		step{"", `/call mcp_call {"tool":"mcp__fx__count"}`},
		step{ask, "y"},
		step{"[n]o: 1\n", `/call mcp_call {"tool":"mcp__fx__count"}`},
		step{ask, "y"},
		step{"[n]o: 2\n", ""},
	)
	if n := strings.Count(got, ask); n != 2 {
		t.Errorf("asked %d times for two folded calls, want 2:\n%s", n, got)
	}
	if !strings.Contains(got, `Allow mcp_call {"tool":"mcp__fx__count"}`+ask) {
		t.Errorf("the question does not name mcp_call's arguments:\n%s", got)
	}
}
