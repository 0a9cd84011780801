package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

// evil is what a hostile server puts in its text: a window title (OSC ...
// BEL), a screen clear (CSI 2 J) and a right-to-left override.
const evil = "\x1b]0;pwned\x07\x1b[2J\u202e"

// evilShown is evil as a terminal must show it.
const evilShown = `\u001b]0;pwned\u0007\u001b[2J\u202e`

// test-evil stands in for a hostile MCP server: a tool whose description and
// result carry evil, a tool that fails with it, a command that replies with
// it, and a stderr line with it, logged the way mcp-client logs one.
func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "test-evil",
		Inject: []host.Dep{host.Require(tools.Key), host.Require(commands.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			s.Logger().Warn("server stderr", "line", "stderr "+evil)
			reg := host.Get(s, tools.Key)
			if _, err := reg.Register(s, tools.Func("evil", "desc "+evil,
				func(context.Context, struct{}) (any, error) { return "result " + evil, nil })); err != nil {
				return err
			}
			if _, err := reg.Register(s, tools.Func("evil_fail", "fails",
				func(context.Context, struct{}) (any, error) { return nil, errors.New("failure " + evil) })); err != nil {
				return err
			}
			_, err := host.Get(s, commands.Key).Register(s, commands.Command{Name: "evil", Handler: func(context.Context, commands.Invocation) commands.Reply {
				return commands.Reply{Text: "reply " + evil}
			}})
			return err
		},
	})
}

// runAs runs a subcommand in-process with stdout and stderr in buffers,
// taken for terminals when terminal is true.
func runAs(t *testing.T, terminal bool, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	std := Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb}
	if terminal {
		std.Terminal = func(v any) bool { return v == &out || v == &errb || v == std.In }
	}
	code = dispatch(ctx, args, std)
	return code, out.String(), errb.String()
}

// sgr matches the colour sequences tint writes, the only escape sequences a
// terminal may get from dsh-host itself.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// assertShownNotExecuted fails when s carries a control character other than
// layout and tint's colours, or does not show evil escaped.
func assertShownNotExecuted(t *testing.T, what, s string) {
	t.Helper()
	if rest := sgr.ReplaceAllString(s, ""); strings.ContainsAny(rest, "\x1b\x07\u202e") {
		t.Errorf("%s reaches the terminal with raw escape sequences:\n%q", what, s)
	}
	if !strings.Contains(s, `u001b]0;pwned`) {
		t.Errorf("%s does not show the escaped sequence:\n%q", what, s)
	}
}

// TestTerminalOutputEscaped: on a terminal, what a server controls (tool
// descriptions, results, errors, command replies, its stderr in the
// coloured log) shows escaped; to a pipe the same outputs carry the exact
// bytes, and --json is exact on a terminal too.
func TestTerminalOutputEscaped(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: bad, name: test-evil}\n")

	t.Run("tools", func(t *testing.T) {
		code, stdout, stderr := runAs(t, true, "", "tools", "-c", file, "--log-level", "info")
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		assertShownNotExecuted(t, "the tools table", stdout)
		assertShownNotExecuted(t, "the coloured log", stderr)
		if !strings.Contains(stdout, "desc "+evilShown) || !strings.Contains(stderr, "stderr ") {
			t.Errorf("stdout or log lacks the escaped text:\n%q\n%q", stdout, stderr)
		}
		if !sgr.MatchString(stderr) {
			t.Errorf("the log on a terminal is not coloured:\n%q", stderr)
		}

		_, piped, _ := runAs(t, false, "", "tools", "-c", file)
		if !strings.Contains(piped, "desc "+evil) {
			t.Errorf("to a pipe the description is not exact:\n%q", piped)
		}
	})

	t.Run("tools --json", func(t *testing.T) {
		// JSON escapes C0 controls itself but not the override: on a
		// terminal too, --json is what the encoder wrote, untouched.
		_, onTerminal, _ := runAs(t, true, "", "tools", "-c", file, "--json")
		if want := `"desc \u001b]0;pwned\u0007\u001b[2J` + "\u202e" + `"`; !strings.Contains(onTerminal, want) {
			t.Errorf("--json on a terminal lacks %q:\n%s", want, onTerminal)
		}
		var got struct{ Tools []app.Tool }
		if err := json.Unmarshal([]byte(onTerminal), &got); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range got.Tools {
			found = found || r.Name == "evil" && r.Description == "desc "+evil
		}
		if !found {
			t.Errorf("--json does not carry the exact description: %+v", got.Tools)
		}
	})

	t.Run("call", func(t *testing.T) {
		code, stdout, stderr := runAs(t, true, "", "call", "-c", file, "evil")
		if code != exitOK || stdout != "result "+evilShown+"\n" {
			t.Errorf("on a terminal: exit %d, stdout %q; want 0, %q (stderr %q)", code, stdout, "result "+evilShown+"\n", stderr)
		}
		code, stdout, _ = runAs(t, false, "", "call", "-c", file, "evil")
		if code != exitOK || stdout != "result "+evil+"\n" {
			t.Errorf("to a pipe: exit %d, stdout %q; want 0, %q", code, stdout, "result "+evil+"\n")
		}
		_, stdout, _ = runAs(t, true, "", "call", "-c", file, "evil", "--json")
		var res console.CallJSON
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Value != "result "+evil {
			t.Errorf("call --json on a terminal: value %q, %v; want the exact bytes", res.Value, err)
		}
	})

	t.Run("prompt", func(t *testing.T) {
		// The tools array is JSON, whose encoder leaves the override raw:
		// on a terminal it is escaped; --json keeps it.
		_, stdout, _ := runAs(t, true, "", "prompt", "-c", file)
		if strings.Contains(stdout, "\u202e") || !strings.Contains(stdout, `\u202e`) {
			t.Errorf("prompt on a terminal does not escape the override:\n%s", stdout)
		}
		_, stdout, _ = runAs(t, true, "", "prompt", "-c", file, "--json")
		if !strings.Contains(stdout, "\u202e") {
			t.Errorf("prompt --json on a terminal is not the exact array:\n%s", stdout)
		}
	})

	t.Run("call error", func(t *testing.T) {
		code, _, stderr := runAs(t, true, "", "call", "-c", file, "evil_fail")
		if code != exitFail {
			t.Errorf("exit %d, want %d", code, exitFail)
		}
		assertShownNotExecuted(t, "the call's error", stderr)
	})

	t.Run("command", func(t *testing.T) {
		code, stdout, _ := runAs(t, true, "", "command", "-c", file, "/evil")
		if code != exitOK || stdout != "reply "+evilShown+"\n" {
			t.Errorf("on a terminal: exit %d, stdout %q", code, stdout)
		}
		_, stdout, _ = runAs(t, false, "", "command", "-c", file, "/evil")
		if stdout != "reply "+evil+"\n" {
			t.Errorf("to a pipe: stdout %q, want the exact bytes", stdout)
		}
	})

	t.Run("console", func(t *testing.T) {
		// run opens its console because stdin and stdout are "terminals";
		// /quit ends it.
		code, stdout, stderr := runAs(t, true, "/tools\n/call evil\n/call evil_fail\n/evil\n/mcp list\n/status\n/quit\n", "run", "-c", file)
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		assertShownNotExecuted(t, "the console", stdout)
		assertShownNotExecuted(t, "the coloured log", stderr)
		for _, want := range []string{"desc " + evilShown, "result " + evilShown, "failure " + evilShown, "reply " + evilShown, "bye"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("the console lacks %q:\n%s", want, stdout)
			}
		}
	})
}
