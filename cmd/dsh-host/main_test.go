package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// binary is dsh-host built once for the tests that run it as a process.
var binary string

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	flag.Parse()
	dir, err := os.MkdirTemp("", "dsh-host-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "dsh-host")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build dsh-host:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// leaks.Find lets goroutines on their way out (a process's
		// waiter, an idle connection's reader) end before it reports.
		if err := leaks.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// writeComposition writes text to composition.yml in a new temporary
// directory and returns its path.
func writeComposition(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// command returns the built binary as a command, with DSH_HOME in a
// temporary directory so that tests never touch the user's settings.
func command(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "DSH_HOME="+t.TempDir())
	cmd.Dir = t.TempDir()
	return cmd
}

// dshHost runs the binary to completion.
func dshHost(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return runToEnd(t, command(t, ctx, args...))
}

// runToEnd runs cmd and returns its exit code and output; failing to run
// it at all fails the test.
func runToEnd(t *testing.T, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("run dsh-host %q: %v", cmd.Args[1:], err)
	}
	return 0, out.String(), errb.String()
}

const greeterComposition = `plugins:
  - id: hi
    name: greeter
    config:
      greeting: Hej
`

func TestCLIExitCodes(t *testing.T) {
	file := writeComposition(t, greeterComposition)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"help", []string{"help"}, exitOK, "Subcommands:", ""},
		{"help of a subcommand", []string{"help", "tools"}, exitOK, "usage: dsh-host tools", ""},
		{"-h", []string{"call", "-h"}, exitOK, "usage: dsh-host call", ""},
		{"unknown subcommand", []string{"frobnicate"}, exitUsage, "", `unknown subcommand "frobnicate"`},
		{"unknown flag", []string{"tools", "--nope"}, exitUsage, "", "flag provided but not defined: -nope"},
		{"call without a tool", []string{"call", "-c", file}, exitUsage, "", "want a tool name"},
		{"call with arguments that are not an object", []string{"call", "-c", file, "greet", "[1]"}, exitUsage, "", "must be a JSON object"},
		{"bad log level", []string{"run", "-c", file, "--log-level", "loud"}, exitUsage, "", `invalid value "loud" for flag -log-level: want debug, info, warn, error`},
		{"bad log format of a one-shot subcommand", []string{"tools", "-c", file, "--log-format", "xml"}, exitUsage, "", "want text, json"},
		{"bad console mode", []string{"run", "-c", file, "--console", "maybe"}, exitUsage, "", "want auto, on, off"},
		{"command without a line", []string{"command", "-c", file}, exitUsage, "", "want a command line"},
		{"missing composition", []string{"tools", "-c", filepath.Join(t.TempDir(), "none.yml")}, exitFail, "", "none.yml"},
		{"flags without a subcommand run run", []string{"-c", filepath.Join(t.TempDir(), "none.yml"), "--console", "off"}, exitFail, "", "dsh-host run: read composition"},
		{"help without a subcommand", []string{"-h"}, exitOK, "Subcommands:", ""},
		{"unknown tool", []string{"call", "-c", file, "nope"}, exitFail, "", `unknown tool`},
		{"tool error", []string{"call", "-c", file, "greet", `{"name": 1}`}, exitFail, "", "greet"},
		{"unknown slash command", []string{"command", "-c", file, "/nope"}, exitFail, "", "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := dshHost(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stdout, tt.wantStdout) || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("exit %d; want %d with stdout containing %q and stderr %q\nstdout:\n%s\nstderr:\n%s",
					code, tt.wantCode, tt.wantStdout, tt.wantStderr, stdout, stderr)
			}
		})
	}
}

func TestCLICheck(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		extra    []string // more arguments
		wantCode int
		want     []string // in stdout for 0, stderr otherwise
	}{
		{"valid", greeterComposition, nil, exitOK, []string{"ok, 1 entries"}},
		{
			"every problem listed",
			"plugins:\n  - id: a\n    name: nope\n  - id: b\n    name: greeter\n    config:\n      greting: x\n",
			nil, exitFail,
			[]string{"2 problem(s)", ":2", `"a"`, `unknown plugin "nope"`, ":7", `"b"`, "greting"},
		},
		{
			"problems found while parsing and in entries that parsed",
			"plugins:\n  - id: a\n    name: greeter\n    config:\n      greeting: ${DSH_TEST_UNSET_VAR}\n  - id: b\n    name: nope\n  - id: c\n    name: greeter\n    config: {greting: x, bogus: 1}\n",
			nil, exitFail,
			[]string{"4 problem(s)", `:5: entry "a": config key greeting: environment variable DSH_TEST_UNSET_VAR`, `:6: entry "b": unknown plugin "nope"`, `:10: entry "c": config key bogus`, `:10: entry "c": config key greting`},
		},
		{"log flags accepted", greeterComposition, []string{"--log-level", "debug", "--log-format", "json"}, exitOK, []string{"ok, 1 entries"}},
		{"unset variable", "plugins:\n  - id: a\n    name: greeter\n    config:\n      greeting: ${DSH_TEST_UNSET_VAR}\n", nil, exitFail, []string{"DSH_TEST_UNSET_VAR"}},
		{"bad yaml", "plugins:\n  - id: [\n", nil, exitFail, []string{"composition.yml:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeComposition(t, tt.text)
			code, stdout, stderr := dshHost(t, append([]string{"check", "-c", file}, tt.extra...)...)
			got := stdout
			if tt.wantCode != exitOK {
				got = stderr
			}
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestCLIPlugins(t *testing.T) {
	code, stdout, stderr := dshHost(t, "plugins")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"greeter", "greeting  string  default Hello", "mcp-client", "\n    serverName  ", "reconnect.maxAttempts", "default 60000\n", "mcp-fold", "tools (built in)"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("plugins output lacks %q:\n%s", w, stdout)
		}
	}
	if strings.Contains(stdout, " \n") {
		t.Errorf("plugins output has trailing spaces:\n%s", stdout)
	}
	code, stdout, _ = dshHost(t, "plugins", "--json")
	var ps []struct{ Name string }
	if err := json.Unmarshal([]byte(stdout), &ps); code != exitOK || err != nil || len(ps) < 5 {
		t.Errorf("plugins --json: exit %d, %v, %d plugins", code, err, len(ps))
	}
}

func TestCLIGreeter(t *testing.T) {
	file := writeComposition(t, greeterComposition)

	t.Run("tools", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "tools", "-c", file)
		if code != exitOK || !strings.Contains(stdout, "greet ") || !strings.Contains(stdout, "Greet someone by name.") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
	t.Run("call", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "call", "-c", file, "greet", `{"name":"Ada"}`)
		if code != exitOK || stdout != "Hej, Ada!\n" {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
		}
	})
	t.Run("call --json, flags after arguments", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "call", "greet", `{"name":"Ada"}`, "-c", file, "--json")
		var got console.CallJSON
		if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil {
			t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
		}
		want := console.CallJSON{Tool: "greet", Value: "Hej, Ada!", Content: got.Content}
		if diff := cmp.Diff(want, got); diff != "" || len(got.Content) != 1 || got.Content[0].Text != "Hej, Ada!" {
			t.Errorf("(-want +got):\n%s\ncontent %+v", diff, got.Content)
		}
	})
	t.Run("prompt --json", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "prompt", "-c", file, "--json")
		var tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal([]byte(stdout), &tools); code != exitOK || err != nil {
			t.Fatalf("exit %d, %v\nstdout:\n%s", code, err, stdout)
		}
		if len(tools) != 1 || tools[0].Type != "function" || tools[0].Function.Name != "greet" {
			t.Errorf("tools = %+v", tools)
		}
		wantSize := fmt.Sprintf("1 tools, %d bytes, ~%d tokens", len(stdout)-1, (len(stdout)-1+3)/4)
		if !strings.Contains(stderr, wantSize) {
			t.Errorf("stderr %q lacks %q", stderr, wantSize)
		}
	})
}

// fixtureComposition runs the in-repo fixture server twice: demo works,
// broken exits at start. marker tags the processes, to find strays.
func fixtureComposition(t *testing.T, marker string) string {
	fixture := mcptest.FixtureBinary(t)
	return fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %[1]q
      args: [-name, %[2]q]
  - id: broken
    name: mcp-client
    config:
      serverName: broken
      transport: stdio
      command: %[1]q
      args: [-crash-on-start, -name, %[2]q]
      failOnStartupError: true
      reconnect: {enabled: false}
  - id: fold
    name: mcp-fold
    config:
      keep: [mcp__demo__greet]
`, fixture, marker)
}

func TestCLIFixture(t *testing.T) {
	marker := fmt.Sprintf("dsh-cli-%d-%d", os.Getpid(), time.Now().UnixNano())
	file := writeComposition(t, fixtureComposition(t, marker))
	defer func() {
		if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	}()

	t.Run("tools lists tools and the failed server", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "tools", "-c", file)
		for _, w := range []string{"mcp__demo__add  ", "demo", "admin.reset", "folded", "mcp_list", "broken (mcp-client) failed", "demo (mcp-client) active"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("stdout lacks %q", w)
			}
		}
		if code != exitOK {
			t.Errorf("exit %d, want 0 even with a failed server", code)
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
	})
	t.Run("tools --json", func(t *testing.T) {
		code, stdout, _ := dshHost(t, "tools", "-c", file, "--json")
		var got struct {
			Tools     []app.Tool
			Instances []app.InstanceRow
		}
		if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil {
			t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
		}
		var add app.Tool
		for _, r := range got.Tools {
			if r.Name == "mcp__demo__add" {
				add = r
			}
		}
		want := app.Tool{Name: "mcp__demo__add", Server: "demo", RawName: "add", Instance: "demo", Folded: true, Description: "Add two numbers."}
		if diff := cmp.Diff(want, add); diff != "" {
			t.Errorf("mcp__demo__add (-want +got):\n%s", diff)
		}
		states := map[string]string{}
		for _, s := range got.Instances {
			states[s.ID] = string(s.State)
		}
		if states["demo"] != "active" || states["broken"] != "failed" {
			t.Errorf("states = %v", states)
		}
	})
	t.Run("call through the server", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "call", "-c", file, "mcp__demo__add", `{"a":2,"b":3}`, "--json")
		if code != exitOK || !strings.Contains(stdout, `"sum": 5`) {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		code, _, stderr = dshHost(t, "call", "-c", file, "mcp__demo__fail")
		if code != exitFail || !strings.Contains(stderr, "mcp__demo__fail") {
			t.Errorf("fail: exit %d, stderr:\n%s", code, stderr)
		}
		// The tool of an instance that failed: the answer names the
		// instance and its error, not only an unknown tool.
		code, _, stderr = dshHost(t, "call", "-c", file, "mcp__broken__add")
		if want := `unknown tool "mcp__broken__add"; instance "broken" (mcp-client) failed: `; code != exitFail || !strings.Contains(stderr, want) || !strings.Contains(stderr, "dsh-host status") {
			t.Errorf("a failed instance's tool: exit %d, stderr:\n%s\nwant %q", code, stderr, want)
		}
	})
	t.Run("prompt is folded", func(t *testing.T) {
		code, stdout, _ := dshHost(t, "prompt", "-c", file)
		if code != exitOK || !strings.Contains(stdout, `"name": "mcp_call"`) || strings.Contains(stdout, `"name": "mcp__demo__add"`) ||
			!strings.Contains(stdout, `"name": "mcp__demo__greet"`) || !strings.Contains(stdout, "4 tools, ") {
			t.Errorf("exit %d\n%s", code, stdout)
		}
	})
	t.Run("command", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "command", "-c", file, "/mcp list demo")
		if code != exitOK || !strings.Contains(stdout, "mcp__demo__add") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

// logLines follows a JSON log stream.
func logLines(t *testing.T, r *bufio.Scanner) <-chan map[string]any {
	ch := make(chan map[string]any, 100)
	go func() {
		defer close(ch)
		for r.Scan() {
			var m map[string]any
			if json.Unmarshal(r.Bytes(), &m) == nil {
				ch <- m
			}
		}
	}()
	return ch
}

// waitLog waits for a log record for which match is true.
func waitLog(t *testing.T, ch <-chan map[string]any, what string, match func(map[string]any) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("log ended while waiting for %s", what)
			}
			if match(m) {
				return
			}
		case <-deadline:
			t.Fatalf("no log record for %s within a minute", what)
		}
	}
}

func msg(text string, kv ...string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		if m["msg"] != text {
			return false
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if m[kv[i]] != kv[i+1] {
				return false
			}
		}
		return true
	}
}

// startRun starts `dsh-host run` with args and JSON logs, its stdout going to
// stdout (which may be nil), and returns the process and its log records. A
// process the test has not waited for is killed when the test ends.
func startRun(t *testing.T, ctx context.Context, stdout io.Writer, args ...string) (*exec.Cmd, <-chan map[string]any) {
	t.Helper()
	cmd := command(t, ctx, append([]string{"run", "--log-format", "json"}, args...)...)
	cmd.Stdout = stdout
	return cmd, startLogging(t, cmd)
}

// startLogging starts cmd, a dsh-host writing JSON logs to stderr, and
// returns its log records. A process the test has not waited for is
// killed when the test ends.
func startLogging(t *testing.T, cmd *exec.Cmd) <-chan map[string]any {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return logLines(t, bufio.NewScanner(stderr))
}

// TestRunReloadAndSignals runs `dsh-host run` as a process: an edit of the
// file restarts the changed entry, a broken edit changes nothing, SIGHUP
// reloads, SIGINT shuts down with exit 0 and leaves no server process.
func TestRunReloadAndSignals(t *testing.T) {
	marker := fmt.Sprintf("dsh-run-%d-%d", os.Getpid(), time.Now().UnixNano())
	fixture := mcptest.FixtureBinary(t)
	text := func(greeting string) string {
		return fmt.Sprintf("plugins:\n  - id: hi\n    name: greeter\n    config:\n      greeting: %s\n  - id: demo\n    name: mcp-client\n    config:\n      serverName: demo\n      transport: stdio\n      command: %q\n      args: [-name, %q]\n", greeting, fixture, marker)
	}
	file := writeComposition(t, text("Hej"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout bytes.Buffer // read after Wait
	cmd, logs := startRun(t, ctx, &stdout, "-c", file, "--console", "off")
	waitLog(t, logs, "running", msg("running; SIGHUP reloads, SIGINT or SIGTERM stops"))

	// A changed greeting restarts hi, and only hi.
	if err := os.WriteFile(file, []byte(text("Hallo")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "hi restarted", func(m map[string]any) bool {
		if m["msg"] != "composition reconciled" || m["restarted"] == nil {
			return false
		}
		if m["restarted"] != "hi" {
			t.Errorf("restarted %v, want hi alone: demo's entry did not change", m["restarted"])
		}
		return true
	})

	// A file that does not parse changes nothing.
	if err := os.WriteFile(file, []byte("plugins: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "the rejected file", msg("composition not applied; the running instances are unchanged"))

	if err := os.WriteFile(file, []byte(text("Hallo")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "the repaired file", msg("composition applied"))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "SIGHUP", msg("SIGHUP: reloading"))
	waitLog(t, logs, "the reload", msg("composition applied"))

	if len(mcptest.ProcessesWith(t, marker)) != 1 {
		t.Errorf("want one fixture server running, have %v", mcptest.ProcessesWith(t, marker))
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "the clean shutdown", msg("shut down cleanly"))
	for range logs {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("run after SIGINT: %v, want exit 0", err)
	}
	// Without a console, the start still shows its progress (the two
	// entries start in parallel, in either order).
	for _, w := range []string{"1/2: ", "2/2: ", "starting ", "connecting ", ": hi…\n", ": demo…\n", fmt.Sprintf("ready: %d active\n", 2+builtins())} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
		t.Errorf("server processes left behind: %v", pids)
	}
}

// TestRunSIGHUPWhileStarting: a SIGHUP that comes while the composition
// starts (here, a server that answers only once the test releases it,
// after the signal) is a reload once it has started, not SIGHUP's default,
// which would kill the process without disposing anything.
func TestRunSIGHUPWhileStarting(t *testing.T) {
	marker := fmt.Sprintf("dsh-hup-%d-%d", os.Getpid(), time.Now().UnixNano())
	fixture := mcptest.FixtureBinary(t)
	// Released by the test, not by a startup timeout that a loaded
	// machine could reach before the signal is sent.
	release := filepath.Join(t.TempDir(), "release")
	file := writeComposition(t, fmt.Sprintf("plugins:\n  - id: slow\n    name: mcp-client\n    config:\n      serverName: slow\n      transport: stdio\n      command: %q\n      args: [-wait-file, %q, -name, %q]\n      sandbox: {read: [%q]}\n", fixture, release, marker, filepath.Dir(release)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outR, outW := io.Pipe()
	cmd, logs := startRun(t, ctx, outW, "-c", file, "--console", "off")
	progress := bufio.NewScanner(outR)
	for progress.Scan() && !strings.Contains(progress.Text(), ": slow…") {
	}
	go io.Copy(io.Discard, outR)
	defer outW.Close()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The signal is the process's by now; the server is still waiting.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "the SIGHUP", msg("SIGHUP: reloading"))
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "the clean shutdown", msg("shut down cleanly"))
	for range logs {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("run: %v, want exit 0", err)
	}
	if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
		t.Errorf("server processes left behind: %v", pids)
	}
}

// TestDefaultComposition runs the repository's own composition.yml, as a
// fresh clone would with Go alone: it validates, and every entry starts,
// the fixture server through `go run` included.
func TestDefaultComposition(t *testing.T) {
	root := mcptest.ModuleRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	check := command(t, ctx, "check")
	check.Dir = root
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	tools := command(t, ctx, "tools", "--json", "--wait", "3m")
	tools.Dir = root
	var stderr bytes.Buffer
	tools.Stderr = &stderr
	out, err := tools.Output()
	if err != nil {
		t.Fatalf("tools: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tools     []app.Tool
		Instances []app.InstanceRow
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	for _, s := range got.Instances {
		if s.State != "active" {
			t.Errorf("instance %s is %s: %s", s.ID, s.State, s.Error)
		}
	}
	folded := map[string]bool{}
	for _, r := range got.Tools {
		folded[r.Name] = r.Folded
	}
	want := map[string]bool{"greet": false, "mcp__demo__greet": false, "mcp__demo__add": true, "mcp_list": false, "mcp_call": false}
	for name, f := range want {
		if g, ok := folded[name]; !ok || g != f {
			t.Errorf("tool %s: listed %v, folded %v; want listed, folded %v", name, ok, g, f)
		}
	}
}

// TestRunStopsOnSIGTERM: SIGTERM, what service managers send, shuts `run`
// down cleanly with exit 0, as SIGINT does.
func TestRunStopsOnSIGTERM(t *testing.T) {
	file := writeComposition(t, greeterComposition)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, logs := startRun(t, ctx, nil, "-c", file)
	waitLog(t, logs, "running", msg("running; SIGHUP reloads, SIGINT or SIGTERM stops"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "the clean shutdown", msg("shut down cleanly"))
	for range logs {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("run after SIGTERM: %v, want exit 0", err)
	}
}

// TestImportThenRun imports a Claude Code style .mcp.json naming real
// servers (server-everything and server-filesystem from npm over stdio, the
// fixture over Streamable HTTP behind a bearer token taken from the
// environment), writes the entries into a new composition, and calls tools
// through it.
func TestImportThenRun(t *testing.T) {
	everything, everythingArgs := mcptest.NodeServer(t, mcptest.ServerEverything, "stdio")
	filesystem, filesystemArgs := mcptest.NodeServer(t, mcptest.ServerFilesystem)
	shared := t.TempDir()
	if err := os.WriteFile(filepath.Join(shared, "note.txt"), []byte("imported"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := mcptest.StartHTTPFixture(t, "-require-header", "Authorization: Bearer s3cret")
	servers := map[string]any{
		"everything": map[string]any{"command": everything, "args": everythingArgs},
		"files":      map[string]any{"type": "stdio", "command": filesystem, "args": append(filesystemArgs, shared)},
		"fixture":    map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${FIXTURE_TOKEN}"}},
	}
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	mcpJSON := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(mcpJSON, data, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "composition.yml")
	if code, stdout, stderr := dshHost(t, "import", mcpJSON, "--write", "-c", file); code != exitOK {
		t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
	}
	defer func() {
		if pids := mcptest.ProcessesWith(t, shared); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	}()
	t.Setenv("FIXTURE_TOKEN", "s3cret")

	tests := []struct {
		args []string
		want string
	}{
		{[]string{"call", "mcp__everything__echo", `{"message":"hi"}`}, "Echo: hi"},
		{[]string{"call", "mcp__fixture__add", `{"a":20,"b":22}`}, "42"},
		{[]string{"call", "mcp__files__read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(shared, "note.txt"))}, "imported"},
	}
	for _, tt := range tests {
		code, stdout, stderr := dshHost(t, append(tt.args, "-c", file)...)
		if code != exitOK || !strings.Contains(stdout, tt.want) {
			t.Errorf("%q: exit %d, want %q\nstdout:\n%s\nstderr:\n%s", tt.args, code, tt.want, stdout, stderr)
		}
	}
}
