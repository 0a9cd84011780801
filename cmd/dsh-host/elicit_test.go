package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
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

func TestCallElicitAndProgress(t *testing.T) {
	file := writeComposition(t, flowComposition(t))
	t.Setenv("DSH_HOME", t.TempDir())
	run := func(terminal bool, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		io := Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr}
		if terminal {
			io.Terminal = func(v any) bool { return v == &stderr }
		}
		code := dispatch(context.Background(), append([]string{"call", "-c", file}, args...), io)
		return code, stdout.String(), stderr.String()
	}
	tests := []struct {
		name     string
		terminal bool
		args     []string
		code     int
		out, err string
	}{
		{"declined by default, with the reason", false, []string{"mcp__demo__ask"}, 0, `"action":"decline"`, ""},
		{"defaults accepted", false, []string{"mcp__demo__ask", `{"nameDefault":"Ada"}`, "--elicit", "defaults"}, 0,
			`{"action":"accept","content":{"color":"b","count":3,"name":"Ada"}}`, ""},
		{"defaults cannot fill a required field", false, []string{"--elicit", "defaults", "mcp__demo__ask"}, 0,
			`name is required and has no default`, ""},
		{"a URL is declined even with defaults", false, []string{"--elicit=defaults", "mcp__demo__ask-url", `{"url":"https://example.com/x"}`}, 0,
			`"action":"decline"`, ""},
		{"a bad --elicit is a usage error", false, []string{"--elicit", "maybe", "mcp__demo__ask"}, 2, "", "want decline, defaults"},
		{"progress on a terminal", true, []string{"mcp__demo__progress", `{"steps":2,"ms":20}`}, 0, "done after 2 steps",
			"\r\x1b[Kmcp__demo__progress: 1/2 (50%) step 1 of 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(tt.terminal, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.err) {
				t.Errorf("exit %d (want %d)\nstdout: %q (want %q)\nstderr: %q (want %q)", code, tt.code, out, tt.out, errs, tt.err)
			}
		})
	}
	if code, out, _ := run(false, "mcp__demo__ask"); code != 0 || !strings.Contains(out, "--elicit defaults") {
		t.Errorf("the decline's reason does not say what to do: %q", out)
	}
	if _, _, errs := run(false, "mcp__demo__progress", `{"steps":2,"ms":5}`); strings.Contains(errs, "\r") {
		t.Errorf("progress went to a stderr that is not a terminal: %q", errs)
	}
	if _, _, errs := run(true, "mcp__demo__progress", `{"steps":2,"ms":20}`); !strings.HasSuffix(errs, "\r\x1b[K") {
		t.Errorf("the progress line is not erased when the call ends: %q", errs)
	}
}
