package hostrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/internal/console"
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

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	leaks.VerifyTestMain(m)
}

var quiet = slog.New(slog.DiscardHandler)

// composition writes text as a composition file in a directory short
// enough for a control socket's path, which is also DSH_HOME.
func composition(t *testing.T, text string) string {
	t.Helper()
	home, err := os.MkdirTemp("", "dshr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	file := filepath.Join(home, "composition.yml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

const greeter = "plugins:\n  - {id: hi, name: greeter, config: {greeting: Hej}}\n"

// TestStartShowsProgress: Start's observer sees every instance from its
// first state, so the startup lines count one per entry as they start,
// then the summary of every instance, the built-in ones included.
func TestStartShowsProgress(t *testing.T) {
	file := composition(t, fmt.Sprintf(`plugins:
  - {id: hi, name: greeter, config: {greeting: Hej}}
  - {id: demo, name: mcp-client, config: {serverName: demo, transport: stdio, command: %q}}
  - {id: fold, name: mcp-fold}
`, mcptest.FixtureBinary(t)))
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := console.NewStartup(&out)
	h, err := Start(context.Background(), c, &host.Options{Logger: quiet}, p.Observe)
	defer Shutdown(h, quiet)
	if err != nil {
		t.Fatal(err)
	}
	p.Finish(h.Status(), " — /help for commands")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got:\n%s", out.String())
	}
	for i, l := range lines[:3] {
		if !strings.Contains(l, fmt.Sprintf(" %d/3: ", i+1)) {
			t.Errorf("line %d = %q", i+1, l)
		}
	}
	if !strings.Contains(out.String(), "connecting ") || !strings.Contains(out.String(), ": demo…") {
		t.Errorf("no connecting line for demo:\n%s", out.String())
	}
	builtins := 0
	for _, p := range host.Plugins() {
		if p.Builtin {
			builtins++
		}
	}
	if want := fmt.Sprintf("ready: %d active — /help for commands", 3+builtins); lines[3] != want {
		t.Errorf("summary = %q, want %q", lines[3], want)
	}
}

// TestOneShotAttaches: a one-shot command asks the running host of its
// composition, saying so, and with --no-attach starts a host of its own;
// a composition nobody runs gets a host of its own, silently.
func TestOneShotAttaches(t *testing.T) {
	file := composition(t, greeter)
	var stderr bytes.Buffer
	std := console.Stdio{In: strings.NewReader(""), Out: io.Discard, Err: &stderr}
	o := OneShot{CommonFlags: cli.CommonFlags{File: file, LogFormat: "text", LogLevel: "error"}, Wait: time.Minute}
	kind := func() string {
		var got string
		code := o.WithAnswers(context.Background(), std, "status", func(a app.App) int {
			got = fmt.Sprintf("%T", a)
			if st, err := a.Status(context.Background()); err != nil || host.Find(st.Instances, "hi").State != host.StateActive {
				t.Errorf("%s: status %+v, %v", got, st, err)
			}
			return 3
		})
		if code != 3 {
			t.Errorf("exit %d, want fn's 3; stderr:\n%s", code, stderr.String())
		}
		return got
	}
	if got := kind(); got != "*app.Local" || stderr.Len() > 0 {
		t.Errorf("nobody runs it: %s, stderr %q; want a host of its own, silently", got, stderr.String())
	}

	h, err := Start(context.Background(), mustLoad(t, file), &host.Options{Logger: quiet}, nil)
	defer Shutdown(h, quiet)
	if err != nil {
		t.Fatal(err)
	}
	stop := ServeControl(h, file, quiet)
	defer stop()
	if got := kind(); got != "*control.Client" || !strings.Contains(stderr.String(), fmt.Sprintf("attached to the running host (pid %d) for %s", os.Getpid(), file)) {
		t.Errorf("a host runs it: %s, stderr %q; want attached, saying so", got, stderr.String())
	}
	stderr.Reset()
	o.NoAttach = true
	if got := kind(); got != "*app.Local" {
		t.Errorf("--no-attach: %s, want a host of its own", got)
	}
}

// TestLoadExplains: a missing composition says how to pass one or make
// one; one that does not parse says where, as every problem on its line.
func TestLoadExplains(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yml")
	if _, err := Load(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "pass the composition with -c FILE") || !strings.Contains(err.Error(), "dsh-host import .mcp.json --write -c "+missing) {
		t.Errorf("missing file: %v", err)
	}
	file := composition(t, "plugins:\n  - {id: a, name: greeter, config: {nope: 1}}\n  - {id: b, name: no-such-plugin}\n")
	c, err := Load(file)
	if err == nil {
		err = host.Check(c)
	}
	lines := ProblemLines(err)
	if len(lines) != 2 || !strings.Contains(lines[0], "nope") || !strings.Contains(lines[1], "no-such-plugin") {
		t.Errorf("problems %q; want one line each, the unknown key among them", lines)
	}
}

func mustLoad(t *testing.T, file string) *host.Composition {
	t.Helper()
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
