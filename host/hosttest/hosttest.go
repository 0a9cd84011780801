// Package hosttest runs plugins on a real host in a test, as the binary
// runs them, without the set-up every plugin test would otherwise repeat:
//
//	h := hosttest.Start(t, "plugins:\n  - {id: clock, name: clock}\n")
//	res := h.Call("clock_now", `{"zone":"UTC"}`)
//	if res.Err != nil || hosttest.Text(res) != "UTC" { ... }
//
// The host has the built-in services the binary ships (tools, commands,
// settings, attachments, resources...), which this package links in; a
// test blank-imports the plugin it tests. Their files live in a temporary
// $DSH_HOME, logs go to the test's log, and the host is shut down when the
// test ends. Start sets an environment variable, so a test using it cannot
// run in parallel (t.Parallel panics).
package hosttest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/elicit"
	_ "github.com/dsh-host/dsh-host/services/logins"
	_ "github.com/dsh-host/dsh-host/services/resources"
	_ "github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// WaitTimeout bounds Wait: long enough for any start on a loaded machine,
// short enough that a test waiting for what never happens says so.
const WaitTimeout = 30 * time.Second

// Host is a running host under test. Its embedded *host.Host offers the
// rest (Status, WaitStatus, Lookup through host.Lookup(h.Host, key)).
type Host struct {
	*host.Host
	t testing.TB
}

// Option changes how Start starts the host.
type Option func(*options)

type options struct {
	settings string
	logger   *slog.Logger
}

// Settings writes text as the user's settings.yaml before the host starts.
func Settings(text string) Option { return func(o *options) { o.settings = text } }

// Logger sends the host's logs to l instead of the test's log.
func Logger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Start starts a host running composition (the YAML of a composition
// file, named composition.yml in errors) and returns once every instance
// has settled: active, failed or pending. A composition that does not
// parse or validate fails the test. The host is shut down when the test
// ends, and a shutdown that times out fails it.
func Start(t testing.TB, composition string, opts ...Option) *Host {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	home := t.TempDir()
	t.Setenv("DSH_HOME", home)
	if o.settings != "" {
		if err := os.WriteFile(filepath.Join(home, "settings.yaml"), []byte(o.settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := &testWriter{t: t}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	h := &Host{Host: host.New(&host.Options{Logger: o.logger}), t: t}
	t.Cleanup(func() {
		if err := h.Shutdown(context.Background()); err != nil {
			t.Errorf("hosttest: shutdown: %v", err)
		}
		w.close()
	})
	h.Apply(composition)
	return h
}

// Apply reconciles the host with composition, as a saved edit of the file
// would, and returns once the instances it touched have settled, with
// what it did to each (host.Host.Reconcile): started, restarted, kept
// (the new config failed, the previous one runs), failed with its error,
// pending or disposed. A composition that does not parse or validate
// fails the test; see Check for its errors.
func (h *Host) Apply(composition string) []host.Outcome {
	h.t.Helper()
	c, err := host.ParseComposition("composition.yml", []byte(composition), nil)
	var out []host.Outcome
	if err == nil {
		out, err = h.Reconcile(context.Background(), c)
	}
	if err != nil {
		h.t.Fatalf("hosttest: the composition does not apply: %v", err)
	}
	return out
}

// Check returns the problems host.Check finds in composition (named
// composition.yml), one per line, each naming file:line, the entry and
// the key; none when it validates. A plugin's test checks its Validate
// with it, without starting anything.
func Check(t testing.TB, composition string) []string {
	t.Helper()
	c, err := host.ParseComposition("composition.yml", []byte(composition), nil)
	if err == nil {
		err = host.Check(c)
	}
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// CheckKey checks that an entry of plugin with config is refused with one
// error, at the line of the config key key, naming the entry and the key
// (what host.KeyErrorf in Validate gives). config is the entry's config
// block, one key per line as in a file; the key's line is marked with a
// "#<" comment, and no mark means the key is missing, reported at the
// entry's line.
func CheckKey(t testing.TB, plugin, key, config string) {
	t.Helper()
	const head = 4 // "plugins:", "- id", "name", "config:"
	line := 2
	var b strings.Builder
	b.WriteString("plugins:\n  - id: e\n    name: " + plugin + "\n    config:\n")
	for i, l := range strings.Split(strings.TrimSuffix(config, "\n"), "\n") {
		if strings.Contains(l, "#<") {
			line = head + i + 1
		}
		b.WriteString("      " + l + "\n")
	}
	got := Check(t, b.String())
	want := "composition.yml:" + strconv.Itoa(line) + `: entry "e": config key ` + key + ": "
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("hosttest: Check =\n%s\nwant one error starting %q; the composition:\n%s", strings.Join(got, "\n"), want, b.String())
	}
}

// Tools returns the host's tool registry; no tools service fails the test.
func (h *Host) Tools() *tools.Registry {
	h.t.Helper()
	reg, ok := host.Lookup(h.Host, tools.Key)
	if !ok {
		h.t.Fatalf("hosttest: no tools service: %v", h.Status())
	}
	return reg
}

// Call runs one call of tool with args (a JSON object; "" is {}) through
// the registry's whole pipeline (hooks, guards, schema, render), as a
// caller of kind "test".
func (h *Host) Call(tool, args string) tools.Result {
	h.t.Helper()
	var raw []byte
	if args != "" {
		raw = []byte(args)
	}
	return h.Tools().Execute(context.Background(), tools.Caller{Kind: "test"}, tool, raw)
}

// Command runs one slash command line ("/clock UTC"); no commands service
// fails the test.
func (h *Host) Command(line string) commands.Reply {
	h.t.Helper()
	cmds, ok := host.Lookup(h.Host, commands.Key)
	if !ok {
		h.t.Fatalf("hosttest: no commands service: %v", h.Status())
	}
	return cmds.Run(context.Background(), tools.Caller{Kind: "test"}, line)
}

// Wait waits until instance id is in state and returns its status; a
// wait longer than WaitTimeout fails the test with every instance's state.
// After Start and Apply the instances have settled already: Wait is for
// what happens later (a provider going away, a reconnect).
func (h *Host) Wait(id string, state host.State) host.InstanceStatus {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	err := h.WaitStatus(ctx, func(st []host.InstanceStatus) bool { return host.Find(st, id).State == state })
	if err != nil {
		h.t.Fatalf("hosttest: instance %s never %s: %v", id, state, err)
	}
	return host.Find(h.Status(), id)
}

// Text is the model-facing text of a result: its text blocks, joined by
// newlines (an error's is "Error: <message>").
func Text(res tools.Result) string {
	var parts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// testWriter sends log lines to the test's log, where a failing test shows
// them and a passing one keeps them quiet. Once the host is shut down it
// drops them: a test's Log after the test ended panics, and an abandoned
// disposer may still log.
type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
