package app_test

// The one suite of the app API: each test runs against a Local over a
// host in this process and against the control socket's Client asking
// the same kind of host, started from a real composition with the in-repo
// fixture server, so that the two cannot drift apart.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"

	_ "github.com/dsh-host/dsh-host/plugins/agent"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	_ "github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/elicit"
	_ "github.com/dsh-host/dsh-host/services/policy"
	_ "github.com/dsh-host/dsh-host/services/resources"
	_ "github.com/dsh-host/dsh-host/services/settings"
	_ "github.com/dsh-host/dsh-host/services/tools"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is one host and the App under test.
type env struct {
	app.App
	Host *host.Host
	File string
	// Kill ends the host's side of the socket (nil for Local): a host
	// that went away mid-call.
	Kill func()
}

// constructor opens an App on h, serving file.
type constructor func(t *testing.T, h *host.Host, file string) (app.App, func())

func local(t *testing.T, h *host.Host, file string) (app.App, func()) {
	return &app.Local{Host: h, File: file}, nil
}

func socket(t *testing.T, h *host.Host, file string) (app.App, func()) {
	t.Helper()
	l, err := control.Listen(file, quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv := control.Serve(l, &app.Local{Host: h, File: file}, file, quiet)
	var once sync.Once
	kill := func() { once.Do(func() { srv.Close() }) }
	t.Cleanup(kill)
	c, err := control.Dial(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, kill
}

// both runs fn against each implementation.
func both(t *testing.T, composition string, fn func(t *testing.T, e *env)) {
	for _, c := range []struct {
		name string
		open constructor
	}{{"local", local}, {"socket", socket}} {
		t.Run(c.name, func(t *testing.T) {
			h, file := start(t, composition)
			a, kill := c.open(t, h, file)
			fn(t, &env{App: a, Host: h, File: file, Kill: kill})
		})
	}
}

// start runs composition in a host watching its file, under a DSH_HOME
// short enough for a socket's path.
func start(t *testing.T, composition string) (*host.Host, string) {
	t.Helper()
	return startHost(t, composition, true)
}

// startUnwatched is start for a host that does not follow its file, as
// chat's and a one-shot command's do not.
func startUnwatched(t *testing.T, composition string) (*host.Host, string) {
	t.Helper()
	return startHost(t, composition, false)
}

func startHost(t *testing.T, composition string, watch bool) (*host.Host, string) {
	t.Helper()
	home, err := os.MkdirTemp("", "dsha")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	file := filepath.Join(home, "composition.yml")
	if err := os.WriteFile(file, []byte(composition), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := host.ReadComposition(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(&host.Options{Logger: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := h.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	if err := h.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if watch {
		wg.Go(func() { h.Watch(ctx, file) })
		// Until the watcher's first load, a reload finds none to ask.
		for st := h.Reloads(); st.Applied+st.Failed == 0; st = h.Reloads() {
			time.Sleep(time.Millisecond)
		}
	}
	return h, file
}

// fixtureComposition: the fixture server (progress, questions, resources,
// a rewritable tool), one that fails to start, a policy that denies
// mcp__fx__fail and asks before mcp__fx__count, and, when model is set,
// an agent on it.
func fixtureComposition(t *testing.T, model *openaitest.Server) string {
	fx := mcptest.FixtureBinary(t)
	s := fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %[1]q
      args: [-progress, -elicit, -counter, -resources, "2"]
  - id: broken
    name: mcp-client
    config:
      serverName: broken
      transport: stdio
      command: %[1]q
      args: [-crash-on-start]
      failOnStartupError: true
      reconnect: {enabled: false}
  - id: policy
    name: policy
    config:
      rules:
        - tools: ["mcp__fx__fail"]
          action: deny
        - tools: ["mcp__fx__count"]
          action: ask
        # Chat's built-in ask before a writing tool (services/policy) is
        # replaced by a rule for chat: the rules above decide alone.
        - callers: [chat]
          action: allow
`, fx)
	if model != nil {
		t.Setenv("APP_TEST_KEY", "sk-app-test")
		s += fmt.Sprintf(`  - id: agent
    name: agent
    config:
      baseUrl: %s
      apiKeyEnv: APP_TEST_KEY
`, model.URL)
	}
	return s
}
