package tools_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestPluginListed(t *testing.T) {
	i := slices.IndexFunc(host.Plugins(), func(p host.PluginInfo) bool { return p.Name == "tools" })
	if i < 0 {
		t.Fatal("the tools plugin is not registered")
	}
	p := host.Plugins()[i]
	if !p.Builtin || !slices.Equal(p.Provides, []string{"tools"}) {
		t.Errorf("tools plugin = %+v, want a built-in providing tools", p)
	}
}

func TestPluginProvidesRegistry(t *testing.T) {
	h := host.New(&host.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	t.Cleanup(func() {
		if err := h.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	// Only the tools built-in runs: the others would touch $DSH_HOME.
	var entries []host.Entry
	for _, p := range host.Plugins() {
		if p.Builtin && p.Name != "tools" {
			entries = append(entries, host.Entry{ID: p.Name, Name: p.Name, Disabled: true})
		}
	}
	if err := h.Update(ctx, &host.Composition{File: "test.yml", Entries: entries}); err != nil {
		t.Fatal(err)
	}
	r, ok := host.Lookup(h, tools.Key)
	if !ok {
		t.Fatalf("no tools service; status: %+v", h.Status())
	}
	mustRegister(t, r, noop("t"))
	if res := r.Execute(ctx, testCaller, "t", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if st := host.Find(h.Status(), "tools"); st.State != host.StateActive {
		t.Errorf("tools instance = %+v, want active", st)
	}
}

func TestPluginRejectsConfigKeys(t *testing.T) {
	c, err := host.ParseComposition("c.yml", []byte("plugins:\n  - id: tools\n    name: tools\n    config:\n      bogus: 1\n"), func(string) (string, bool) { return "", false })
	if err == nil {
		err = host.Check(c)
	}
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("a tools entry with an unknown key: err = %v, want an error naming the key", err)
	}
}
