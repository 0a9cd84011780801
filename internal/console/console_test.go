package console

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"

	// What the test compositions run, as the binary builds them in.
	_ "github.com/dsh-host/dsh-host/plugins/greeter"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/plugins/mcpoutput"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	_ "github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/elicit"
	_ "github.com/dsh-host/dsh-host/services/logins"
	_ "github.com/dsh-host/dsh-host/services/policy"
	_ "github.com/dsh-host/dsh-host/services/resources"
	_ "github.com/dsh-host/dsh-host/services/settings"
	_ "github.com/dsh-host/dsh-host/services/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	leaks.VerifyTestMain(m)
}

const greeterComposition = `plugins:
  - id: hi
    name: greeter
    config:
      greeting: Hej
`

// startTestHost starts text in-process, with DSH_HOME in a temporary
// directory, and shuts it down when the test ends.
func startTestHost(t *testing.T, text string) *host.Host {
	t.Helper()
	return hosttest.Start(t, text).Host
}

// runConsole runs the console on h, without a terminal and without hooks.
func runConsole(ctx context.Context, h *host.Host, in io.Reader, out io.Writer) {
	Run(ctx, &app.Local{Host: h}, in, out, nil, Hooks{})
}

func TestConsole(t *testing.T) {
	h := startTestHost(t, mcptest.ConsoleComposition(t))
	tests := []struct {
		name    string
		input   string
		want    []string
		notWant []string
	}{
		{"help", "/help\n", []string{"/status", "/call <tool> [json]", "/quit", "/mcp "}, nil},
		{"status", "/status\n", []string{"ID ", "hi ", "greeter", "demo ", "mcp-client", "active", "connected", "12 "}, []string{"failed"}},
		{"tools", "/tools\n", []string{"mcp__demo__add ", "folded", "greet ", "native", "mcp_call"}, nil},
		{"prompt", "/prompt\n", []string{`"name": "mcp_list"`, `"name": "greet"`, `"name": "mcp_read_output"`, "4 tools, ", " bytes, ~"}, []string{`"name": "mcp__demo__add"`}},
		{"call", "/call greet {\"name\":\"Ada\"}\n", []string{"Hej, Ada!"}, nil},
		{"call through the server", "/call mcp__demo__add {\"a\":1,\"b\":2}\n", []string{"3"}, []string{"error"}},
		{"call without arguments object", "/call greet [1]\n", []string{"must be a JSON object"}, []string{"Hej"}},
		{"call an unknown tool", "/call nope\n", []string{"error: ", "unknown tool"}, nil},
		{"call without a tool", "/call\n", []string{"usage: /call"}, nil},
		{"a registered command", "/mcp list demo\n", []string{"mcp__demo__add"}, []string{"error: "}},
		{"an unknown command", "/nope\n", []string{"error: "}, nil},
		{"not a command", "hello\n", []string{"/help lists them"}, nil},
		{"reload", "/reload\n", []string{"reloading"}, nil},
		{"blank lines are ignored", "\n\n  \n", nil, []string{"/help"}},
		{"quit stops reading", "/quit\n/status\n", []string{"bye"}, []string{"ID "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			runConsole(context.Background(), h, strings.NewReader(tt.input), &out)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}

// TestConsoleStopsWithContext ends the console when its context ends, while
// stdin stays open (as a terminal does on SIGINT).
func TestConsoleStopsWithContext(t *testing.T) {
	h := startTestHost(t, greeterComposition)
	pr, pw := io.Pipe()
	defer pw.Close() // lets the line reader go
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		runConsole(ctx, h, pr, &out)
	}()
	// The write returns once the console has read the line.
	if _, err := io.WriteString(pw, "/call greet {\"name\":\"Bo\"}\n"); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if strings.Contains(out.String(), "bye") {
		t.Errorf("output %q: the console quit as if told to", out.String())
	}
}

// attach serves h on a control socket, as a running host does, and
// returns the socket's client: the console attached to it.
func attach(t *testing.T, h *host.Host) app.App {
	a, _ := attachKill(t, h)
	return a
}

// attachKill is attach, with what closes the host's side of the socket.
func attachKill(t *testing.T, h *host.Host) (app.App, func()) {
	t.Helper()
	home, err := os.MkdirTemp("", "dshc") // short: a socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	file := filepath.Join(home, "composition.yml")
	quiet := slog.New(slog.DiscardHandler)
	l, err := control.Listen(file, quiet)
	if err != nil {
		t.Fatal(err)
	}
	s := control.Serve(l, &app.Local{Host: h, File: file}, file, quiet)
	t.Cleanup(func() { s.Close() })
	c, err := control.Dial(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, func() { s.Close() }
}

// TestConsoleHostGone: attached to a host that went away, each line says
// why it could not be answered and the console goes on to the end of its
// input, as it does on a host of its own.
func TestConsoleHostGone(t *testing.T) {
	a, kill := attachKill(t, startTestHost(t, greeterComposition))
	kill()
	var out bytes.Buffer
	Run(context.Background(), a, strings.NewReader("/status\n/tools\n/call greet\n/nope\n/help\n/quit\n"), &out, nil, Hooks{})
	got := out.String()
	if n := strings.Count(got, "does not answer (stopped? dsh-host status says)"); n != 4 || !strings.HasSuffix(got, "bye\n") || !strings.Contains(got, "/status") {
		t.Errorf("console on a host gone:\n%s\nwant each request's error, /help's own commands, then bye", got)
	}
}

// TestConsoleReload: /reload waits for the outcome and says it; on a host
// that does not follow its file (chat's), it says so at once instead of
// claiming a reload.
func TestConsoleReload(t *testing.T) {
	var out bytes.Buffer
	runConsole(context.Background(), startTestHost(t, greeterComposition), strings.NewReader("/reload\n"), &out)
	if got := out.String(); !strings.Contains(got, "error: this host does not follow its composition file") {
		t.Errorf("reload of a host that follows no file:\n%s", got)
	}

	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(greeterComposition), 0o600); err != nil {
		t.Fatal(err)
	}
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Watch(ctx, file) }()
	defer func() { cancel(); <-done; h.Shutdown(context.Background()) }()
	for st := h.Reloads(); st.Applied+st.Failed == 0; st = h.Reloads() {
		time.Sleep(time.Millisecond) // the watcher's first load
	}
	out.Reset()
	runConsole(context.Background(), h, strings.NewReader("/reload\n"), &out)
	if got := out.String(); !strings.HasPrefix(got, "reloading\nreloaded; ") || !strings.Contains(got, " active") {
		t.Errorf("reload of a host that follows its file:\n%s", got)
	}
}
