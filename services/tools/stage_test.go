package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

type overlapToolsConfig struct {
	Version string   `yaml:"version"`
	Names   []string `yaml:"names"`
}

// stageGate holds test-tools-overlap instances back from Ready; applied
// hears of each Apply.
var (
	stageGate    atomic.Pointer[chan struct{}]
	stageApplied atomic.Pointer[chan string]
	stageScopes  sync.Map // version → *host.Scope
)

func init() {
	host.Register(host.Definition[overlapToolsConfig]{
		Name:         "test-tools-overlap",
		Inject:       []host.Dep{host.Require(tools.Key)},
		ReportsReady: true,
		Overlap:      true,
		Apply: func(s *host.Scope, c overlapToolsConfig) error {
			reg := host.Get(s, tools.Key)
			stageScopes.Store(c.Version, s)
			for _, name := range c.Names {
				version := c.Version
				if _, err := reg.Register(s, tools.Definition{Name: name, Execute: func(context.Context, tools.Call) (tools.Output, error) {
					return tools.Output{Value: json.RawMessage(`"` + version + `"`)}, nil
				}}); err != nil {
					return err
				}
			}
			if ch := stageApplied.Load(); ch != nil {
				*ch <- c.Version
			}
			if g := stageGate.Load(); g != nil {
				s.Go("ready", func(ctx context.Context) {
					select {
					case <-*g:
						s.Ready()
					case <-ctx.Done():
					}
				})
				return nil
			}
			s.Ready()
			return nil
		},
	})
}

// TestStagedToolsStayInvisibleUntilTheSwap: the tools of an instance that
// starts beside the one it replaces are neither listed nor called until it
// is ready; then they replace the old ones, with one assembly change.
func TestStagedToolsStayInvisibleUntilTheSwap(t *testing.T) {
	h := host.New(&host.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	t.Cleanup(func() {
		if err := h.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	composition := func(version string, names ...string) *host.Composition {
		var entries []host.Entry
		for _, p := range host.Plugins() {
			if p.Builtin && p.Name != "tools" {
				entries = append(entries, host.Entry{ID: p.Name, Name: p.Name, Disabled: true})
			}
		}
		list := make([]any, len(names))
		for i, n := range names {
			list[i] = n
		}
		return &host.Composition{File: "test.yml", Entries: append(entries, host.Entry{ID: "x", Name: "test-tools-overlap", Config: map[string]any{"version": version, "names": list}})}
	}
	if err := h.Update(ctx, composition("v1", "a", "b")); err != nil {
		t.Fatal(err)
	}
	r, _ := host.Lookup(h, tools.Key)
	var changes atomic.Int32
	follower := host.NewScope(ctx, "follower", nil)
	t.Cleanup(func() { follower.Dispose(0) })
	r.OnAssemblyChange(follower, func() { changes.Add(1) })

	gate := make(chan struct{})
	applied := make(chan string, 1)
	stageGate.Store(&gate)
	stageApplied.Store(&applied)
	t.Cleanup(func() { stageGate.Store(nil); stageApplied.Store(nil) })
	done := make(chan error, 1)
	go func() { done <- h.Update(ctx, composition("v2", "a", "c")) }()
	<-applied

	call := func(name string) string {
		res := r.Execute(ctx, testCaller, name, nil)
		if res.Err != nil {
			return "error"
		}
		return fmt.Sprintf("%s", res.Value)
	}
	if got := r.Names(testCaller); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("while staged, names %q, want the old a, b", got)
	}
	if got := call("a"); got != `"v1"` {
		t.Errorf("while staged, a answered %s, want the old instance's v1", got)
	}
	if got := call("c"); got != "error" {
		t.Errorf("while staged, c answered %s, want unknown", got)
	}
	if n := changes.Load(); n != 0 {
		t.Errorf("%d assembly changes while staged, want none", n)
	}
	v, _ := stageScopes.Load("v1")
	old := v.(*host.Scope)
	if !old.Enter() { // a call in flight keeps the old instance draining
		t.Fatal("the serving instance refused a call")
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// What the replaced instance registers while it drains is not served.
	if _, err := r.Register(old, noop("late")); err != nil {
		t.Errorf("register on the retired instance: %v", err)
	}
	old.Leave()
	if got := r.Names(testCaller); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("after the swap, names %q, want a, c", got)
	}
	if got := call("a"); got != `"v2"` {
		t.Errorf("after the swap, a answered %s, want the new instance's v2", got)
	}
	if n := changes.Load(); n != 1 {
		t.Errorf("%d assembly changes for the swap, want one", n)
	}
}
