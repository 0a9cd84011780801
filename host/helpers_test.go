package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

func TestMain(m *testing.M) {
	leaks.VerifyTestMain(m)
}

// rec records what the test plugins do, by instance id, in order.
var rec recorder

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// take returns the events so far and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// count returns how many events so far start with prefix.
func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// greeter is the service the test provider provides.
type greeter struct{ greeting string }

var testKey = NewKey[*greeter]("test-greeting")

type noopConfig struct {
	Greeting string   `yaml:"greeting"`
	Tags     []string `yaml:"tags"`
	Nested   struct {
		Level int           `yaml:"level"`
		Wait  time.Duration `yaml:"wait"`
	} `yaml:"nested"`
	Items []struct {
		Name string `yaml:"name"`
	} `yaml:"items"`
}

// treeConfig holds itself, as a config may (a node type, a tree).
type treeConfig struct {
	Name     string       `yaml:"name"`
	Children []treeConfig `yaml:"children"`
	Parent   *treeConfig  `yaml:"parent"`
}

type secretiveConfig struct {
	TokenEnv string `yaml:"tokenEnv"`
}

type claimerConfig struct {
	ServerName string `yaml:"serverName"`
	Fail       bool   `yaml:"fail"`  // Apply fails
	Stuck      bool   `yaml:"stuck"` // a disposer waits for stuckGate
}

// panickyConfig makes test-panicky's Validate or Claims panic.
type panickyConfig struct {
	InValidate bool `yaml:"inValidate"`
	InClaims   bool `yaml:"inClaims"`
}

type providerConfig struct {
	Greeting string `yaml:"greeting"`
	Fail     bool   `yaml:"fail"`
}

// stuckGate, when set, holds the disposers of test-stuck instances until it
// is closed.
var stuckGate atomic.Pointer[chan struct{}]

// applyGate, when set, makes test-slow instances wait for it in Apply.
var applyGate atomic.Pointer[chan struct{}]

// flakyFails makes test-flaky instances fail.
var flakyFails atomic.Bool

// lateGate releases the Provide of test-late-provider instances.
var lateGate atomic.Pointer[chan struct{}]

var (
	testEvent     = NewEvent[string]("test-event")
	testWaterfall = NewWaterfall[string]("test-waterfall")
)

// noopApplies counts test-noop applies, for the benchmark.
var noopApplies atomic.Int64

func init() {
	Register(Definition[noopConfig]{
		Name:        "test-noop",
		Description: "does nothing, records its life",
		Defaults:    func() noopConfig { return noopConfig{Greeting: "hello"} },
		Validate: func(c *noopConfig) error {
			if c.Greeting == "invalid" {
				return errors.New("greeting: must not be \"invalid\"")
			}
			return nil
		},
		Apply: func(s *Scope, c noopConfig) error {
			noopApplies.Add(1)
			rec.add("apply %s %s", s.ID(), c.Greeting)
			s.OnDispose("record", func() error { rec.add("dispose %s", s.ID()); return nil })
			s.Go("idle", func(ctx context.Context) { <-ctx.Done() })
			return nil
		},
	})
	Register(Definition[noopConfig]{
		Name: "test-bench",
		Apply: func(s *Scope, c noopConfig) error {
			noopApplies.Add(1)
			return nil
		},
	})
	Register(Definition[providerConfig]{
		Name:     "test-provider",
		Provides: []AnyKey{testKey},
		Apply: func(s *Scope, c providerConfig) error {
			rec.add("apply %s %s", s.ID(), c.Greeting)
			s.OnDispose("record", func() error { rec.add("dispose %s", s.ID()); return nil })
			if err := Provide(s, testKey, &greeter{c.Greeting}); err != nil {
				return err
			}
			if c.Fail {
				return errors.New("provider told to fail")
			}
			return nil
		},
	})
	Register(Definition[struct{}]{
		Name:   "test-consumer",
		Inject: []Dep{Require(testKey)},
		Apply: func(s *Scope, _ struct{}) error {
			rec.add("apply %s %s", s.ID(), Get(s, testKey).greeting)
			s.OnDispose("record", func() error { rec.add("dispose %s", s.ID()); return nil })
			return nil
		},
	})
	Register(Definition[struct{}]{
		Name:   "test-optional",
		Inject: []Dep{Optional(testKey)},
		Apply: func(s *Scope, _ struct{}) error {
			g, ok := Lookup(s, testKey)
			what := "none"
			if ok {
				what = g.greeting
			}
			rec.add("apply %s %s", s.ID(), what)
			s.OnDispose("record", func() error { rec.add("dispose %s", s.ID()); return nil })
			return nil
		},
	})
	Register(Definition[claimerConfig]{
		Name: "test-claimer",
		Claims: func(c *claimerConfig) []Claim {
			// The tool twice: a plugin may list a name more than once.
			return []Claim{{Kind: "serverName", Value: c.ServerName, Key: "serverName"}, {Kind: "tool", Value: "claimer_tool"}, {Kind: "tool", Value: "claimer_tool"}}
		},
		Apply: func(s *Scope, c claimerConfig) error {
			rec.add("apply %s %s", s.ID(), c.ServerName)
			if g := stuckGate.Load(); c.Stuck && g != nil {
				s.OnDispose("stuck", func() error { <-*g; return nil })
			}
			if c.Fail {
				return errors.New("claimer told to fail")
			}
			return nil
		},
	})
	Register(Definition[treeConfig]{
		Name:  "test-tree",
		Apply: func(*Scope, treeConfig) error { return nil },
	})
	Register(Definition[panickyConfig]{
		Name: "test-panicky",
		Validate: func(c *panickyConfig) error {
			if c.InValidate {
				panic("validate boom")
			}
			return nil
		},
		Claims: func(c *panickyConfig) []Claim {
			if c.InClaims {
				panic("claims boom")
			}
			return nil
		},
		Apply: func(*Scope, panickyConfig) error { return nil },
	})
	Register(Definition[secretiveConfig]{
		Name:    "test-secretive",
		Secrets: func(c *secretiveConfig) []string { return []string{c.TokenEnv} },
		Apply:   func(*Scope, secretiveConfig) error { return nil },
	})
	Register(Definition[struct{}]{
		Name: "test-fail",
		Apply: func(s *Scope, _ struct{}) error {
			s.OnDispose("rollback", func() error { rec.add("rollback %s", s.ID()); return nil })
			testEvent.On(s, func(v string) { rec.add("event %s %s", s.ID(), v) })
			testWaterfall.On(s, func(ctx context.Context, v string, next Next[string]) (string, error) {
				return next(ctx, v+" "+s.ID())
			})
			s.Go("worker", func(ctx context.Context) { <-ctx.Done() })
			return errors.New("cannot start: told to fail")
		},
	})
	Register(Definition[struct{}]{
		Name:     "test-late-provider",
		Provides: []AnyKey{testKey},
		Apply: func(s *Scope, _ struct{}) error {
			g := lateGate.Load()
			s.Go("provide later", func(ctx context.Context) {
				select {
				case <-*g:
				case <-ctx.Done():
					return
				}
				if err := Provide(s, testKey, &greeter{"late"}); err != nil {
					rec.add("provide failed: %v", err)
				}
			})
			return nil
		},
	})
	Register(Definition[struct{}]{
		Name: "test-flaky",
		Apply: func(s *Scope, _ struct{}) error {
			rec.add("apply %s", s.ID())
			if flakyFails.Load() {
				return errors.New("server is down")
			}
			return nil
		},
	})
	Register(Definition[struct{}]{
		Name: "test-panic",
		Apply: func(s *Scope, _ struct{}) error {
			s.OnDispose("rollback", func() error { rec.add("rollback %s", s.ID()); return nil })
			panic("boom")
		},
	})
	Register(Definition[struct{}]{
		Name: "test-stuck",
		Apply: func(s *Scope, _ struct{}) error {
			g := stuckGate.Load()
			s.OnDispose("stuck", func() error {
				if g != nil {
					<-*g
				}
				return nil
			})
			return nil
		},
	})
	Register(Definition[struct{}]{
		Name: "test-slow",
		Apply: func(s *Scope, _ struct{}) error {
			if g := applyGate.Load(); g != nil {
				rec.add("waiting %s", s.ID())
				select {
				case <-*g:
				case <-s.Context().Done():
					return s.Context().Err()
				}
			}
			rec.add("apply %s", s.ID())
			return nil
		},
	})
	Register(Definition[struct{}]{
		Name: "test-deaf",
		Apply: func(s *Scope, _ struct{}) error {
			// Ignores its context: only applyGate ends its Apply.
			if g := applyGate.Load(); g != nil {
				<-*g
			}
			rec.add("apply %s", s.ID())
			return nil
		},
	})
	Register(Definition[struct{}]{
		Name: "test-cycle-a", Inject: []Dep{Require(NewKey[int]("test-cycle-b"))}, Provides: []AnyKey{NewKey[int]("test-cycle-a")},
		Apply: func(*Scope, struct{}) error { return nil },
	})
	Register(Definition[struct{}]{
		Name: "test-cycle-b", Inject: []Dep{Optional(NewKey[int]("test-cycle-a"))}, Provides: []AnyKey{NewKey[int]("test-cycle-b")},
		Apply: func(*Scope, struct{}) error { return nil },
	})
	Register(Definition[noopConfig]{
		Name:     "test-builtin",
		Builtin:  true,
		Defaults: func() noopConfig { return noopConfig{Greeting: "builtin"} },
		Apply: func(s *Scope, c noopConfig) error {
			s.SetDetail("greets with " + c.Greeting)
			return nil
		},
	})
}

// testLogger writes warnings and errors to the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newHost returns a host shut down when the test ends.
func newHost(t testing.TB, opts *Options) *Host {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = func(string) (string, bool) { return "", false }
	}
	h := New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	rec.take()
	return h
}

// parse parses composition YAML named test.yml, failing the test on error.
func parse(t testing.TB, yaml string) *Composition {
	t.Helper()
	c, err := ParseComposition("test.yml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return c
}

// apply parses and applies yaml, failing the test on error.
func apply(t testing.TB, h *Host, yaml string) {
	t.Helper()
	if err := h.Update(context.Background(), parse(t, yaml)); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// states returns id=state for every instance but the test built-in.
func states(h *Host) map[string]State {
	out := map[string]State{}
	for _, st := range h.Status() {
		if st.ID != "test-builtin" {
			out[st.ID] = st.State
		}
	}
	return out
}

// scopes returns the current scope of every running instance.
func scopes(h *Host) map[string]*Scope {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]*Scope{}
	for _, in := range h.order {
		if in.scope != nil {
			out[in.entry.ID] = in.scope
		}
	}
	return out
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// writeFile writes data to path, failing the test on error.
func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
