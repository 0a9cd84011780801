package mcpfold

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name     string
		raw      any
		want     gateState
		problems int
	}{
		{"absent", nil, gateState{ServerIDs: map[string]int{}}, 0},
		{"defaults", map[string]any{}, gateState{ServerIDs: map[string]int{}}, 0},
		{"valid", map[string]any{"serverIds": map[string]any{"github": 1, "fs": 2.0}, "disabled": []any{2}},
			gateState{ServerIDs: map[string]int{"github": 1, "fs": 2}, Disabled: []int{2}}, 0},
		{"out of range and non-integer ids dropped", map[string]any{"serverIds": map[string]any{"a": 0, "b": 100, "c": 1.5, "d": "3", "e": 7}},
			gateState{ServerIDs: map[string]int{"e": 7}}, 4},
		{"duplicate id: first name in order wins", map[string]any{"serverIds": map[string]any{"zeta": 4, "alpha": 4}},
			gateState{ServerIDs: map[string]int{"alpha": 4}}, 1},
		{"disabled deduplicated in order, invalid dropped", map[string]any{"disabled": []any{5, 3, 5, "x", 0, 3, 99}},
			gateState{ServerIDs: map[string]int{}, Disabled: []int{5, 3, 99}}, 2},
		{"section is a string", "garbage", gateState{ServerIDs: map[string]int{}}, 1},
		{"serverIds is a list", map[string]any{"serverIds": []any{1}, "disabled": 3}, gateState{ServerIDs: map[string]int{}}, 2},
		{"yaml.v2-style map", map[any]any{"serverIds": map[any]any{"gh": 9}}, gateState{ServerIDs: map[string]int{"gh": 9}}, 0},
		{"unknown key kept out", map[string]any{"serverIds": map[string]any{"gh": 1}, "extra": true}, gateState{ServerIDs: map[string]int{"gh": 1}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := normalize(tt.raw, nil)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("normalize (-want +got):\n%s", diff)
			}
			if len(problems) != tt.problems {
				t.Fatalf("problems = %q, want %d", problems, tt.problems)
			}
		})
	}
}

func TestDisabledNeedsPositiveEvidence(t *testing.T) {
	g := gateState{ServerIDs: map[string]int{"github": 1, "fs": 2}, Disabled: []int{1, 7}}
	for server, want := range map[string]bool{"github": true, "fs": false, "ghost": false} {
		if got := g.disabled(server); got != want {
			t.Errorf("disabled(%q) = %v, want %v", server, got, want)
		}
	}
	var none *gateState
	if none.disabled("github") {
		t.Error("a nil gate disabled a server")
	}
}

func TestAllocate(t *testing.T) {
	full := map[string]int{}
	for i := 1; i <= maxID; i++ {
		full[fmt.Sprintf("s%d", i)] = i
	}
	tests := []struct {
		name      string
		start     gateState
		names     []string
		want      map[string]int
		wantAdded bool
	}{
		{"smallest first", gateState{}, []string{"github", "fs"}, map[string]int{"github": 1, "fs": 2}, true},
		{"gaps filled", gateState{ServerIDs: map[string]int{"a": 1, "c": 3}}, []string{"a", "b", "c", "d"},
			map[string]int{"a": 1, "b": 2, "c": 3, "d": 4}, true},
		{"orphan disabled id is burned", gateState{ServerIDs: map[string]int{"a": 1}, Disabled: []int{2}}, []string{"b"},
			map[string]int{"a": 1, "b": 3}, true},
		{"gone names keep their ids", gateState{ServerIDs: map[string]int{"old": 1}}, []string{"new"},
			map[string]int{"old": 1, "new": 2}, true},
		{"nothing new", gateState{ServerIDs: map[string]int{"a": 1}}, []string{"a"}, map[string]int{"a": 1}, false},
		{"full", gateState{ServerIDs: full}, []string{"late"}, full, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.start.clone()
			added := g.allocate(tt.names)
			if added != tt.wantAdded {
				t.Fatalf("added = %v, want %v", added, tt.wantAdded)
			}
			if diff := cmp.Diff(tt.want, g.ServerIDs, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReverseLookup(t *testing.T) {
	g := gateState{ServerIDs: map[string]int{"github": 4}}
	if n, ok := g.nameOf(4); !ok || n != "github" {
		t.Fatalf("nameOf(4) = %q, %v", n, ok)
	}
	if _, ok := g.nameOf(5); ok {
		t.Fatal("nameOf(5) found a server")
	}
}

func TestIDsPersistOnceAndAreStable(t *testing.T) {
	r := newRig(t)
	r.run("")
	r.run("")
	r.run("config")
	if got := r.store.writeCount(); got != 1 {
		t.Fatalf("%d writes, want exactly 1 (only when an id is added)", got)
	}
	g, _ := normalize(r.store.stored(), nil)
	if diff := cmp.Diff(map[string]int{"fs": 1, "github": 2}, g.ServerIDs); diff != "" {
		t.Fatalf("stored ids (-want +got):\n%s", diff)
	}
	// A new server gets the next id; a server that goes keeps its id.
	register(t, r.reg, nil, fakeTool{"mcp__web__fetch", "Fetch a URL.", `{}`})
	r.run("")
	g, _ = normalize(r.store.stored(), nil)
	if diff := cmp.Diff(map[string]int{"fs": 1, "github": 2, "web": 3}, g.ServerIDs); diff != "" {
		t.Fatalf("stored ids after a new server (-want +got):\n%s", diff)
	}
}

func TestToggleFlow(t *testing.T) {
	r := newRig(t, withConfig(func(c *Config) { c.Keep = []string{"mcp__github__*"} }))
	r.run("") // fs=1, github=2

	if reply := r.run("disable 2"); reply.Error || reply.Text != `server "github" (id 2) disabled — its tools fold out of every prompt until "/mcp enable 2"` {
		t.Fatalf("disable: %+v", reply)
	}
	// Forced fold beats keep.
	if names := r.names(testCaller); containsName(names, "mcp__github__create_issue") {
		t.Fatalf("a disabled server's kept tool is still in the prompt: %v", names)
	}
	// Catalog hiding and dispatch refusal.
	c := catalogOf(t, r.exec(listName, `{}`))
	if diff := cmp.Diff([][]string{{"fs", "mcp__fs__list_directory", "mcp__fs__read_file", "mcp__fs__write_file"}}, shape(c)); diff != "" {
		t.Fatalf("catalog while disabled (-want +got):\n%s", diff)
	}
	if got := errText(t, r.exec(callName, `{"tool":"mcp__github__create_issue","arguments":{"title":"x"}}`)); !strings.Contains(got, `"/mcp enable 2"`) {
		t.Fatalf("mcp_call while disabled: %q", got)
	}
	// The guard refuses a direct native call too.
	res := r.exec("mcp__github__create_issue", `{"title":"x"}`)
	if res.Err == nil || !strings.Contains(res.Err.Error(), `server "github" is disabled`) || r.rec.count() != 0 {
		t.Fatalf("direct call while disabled: %v (calls %d)", res.Err, r.rec.count())
	}
	// Idempotent.
	writes := r.store.writeCount()
	if reply := r.run("disable 2"); reply.Error || reply.Text != `server "github" (id 2) is already disabled — nothing changed` {
		t.Fatalf("second disable: %+v", reply)
	}
	if r.store.writeCount() != writes {
		t.Fatal("an idempotent toggle wrote the file")
	}
	// The overview shows the marker and hides the tools.
	ov := r.run("").Text
	if !strings.Contains(ov, "[2] github ⏸ disabled — hides 3 tool(s)") || strings.Contains(ov, "create_issue") {
		t.Fatalf("overview while disabled:\n%s", ov)
	}

	if reply := r.run("enable 2"); reply.Error || reply.Text != `server "github" (id 2) enabled — back to normal folding/catalog/dispatch under the same id` {
		t.Fatalf("enable: %+v", reply)
	}
	if reply := r.run("enable 2"); reply.Error || reply.Text != `server "github" (id 2) is not disabled — nothing changed` {
		t.Fatalf("second enable: %+v", reply)
	}
	if names := r.names(testCaller); !containsName(names, "mcp__github__create_issue") {
		t.Fatalf("the kept tool did not come back: %v", names)
	}
	if res := r.exec("mcp__github__create_issue", `{"title":"x"}`); res.Err != nil {
		t.Fatalf("direct call after enable: %v", res.Err)
	}
	g, _ := normalize(r.store.stored(), nil)
	if g.ServerIDs["github"] != 2 || len(g.Disabled) != 0 {
		t.Fatalf("stored after enable: %+v (the id must be kept)", g)
	}
}

func TestToggleErrors(t *testing.T) {
	t.Run("unknown id", func(t *testing.T) {
		r := newRig(t)
		reply := r.run("disable 42")
		if !reply.Error || !strings.HasPrefix(reply.Text, "no live MCP server carries id 42\nUsage: /mcp ") {
			t.Fatalf("%+v", reply)
		}
	})
	t.Run("huge id", func(t *testing.T) {
		r := newRig(t)
		if reply := r.run("disable 99999999999999999999999"); !reply.Error || !strings.HasPrefix(reply.Text, "no live MCP server carries id") {
			t.Fatalf("%+v", reply)
		}
	})
	t.Run("mapped but not live", func(t *testing.T) {
		r := newRig(t, withStore(&memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"gone": 5}})}))
		reply := r.run("disable 5")
		if !reply.Error || !strings.HasPrefix(reply.Text, `"gone" carries id 5 but has no visible tools in this scope right now`+"\nUsage:") {
			t.Fatalf("%+v", reply)
		}
	})
	t.Run("no settings", func(t *testing.T) {
		r := newRig(t, withoutSettings())
		reply := r.run("disable 1")
		if !reply.Error || !strings.Contains(reply.Text, "needs the settings service") {
			t.Fatalf("%+v", reply)
		}
		// Without settings nothing is disabled and the tree has no ids.
		if ov := r.run("").Text; !strings.Contains(ov, "\ngithub (3)\n") || strings.Contains(ov, "[") {
			t.Fatalf("overview without settings:\n%s", ov)
		}
	})
	t.Run("ids moved since the snapshot", func(t *testing.T) {
		store := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"fs": 1, "github": 2}})}
		r := newRig(t, withStore(store))
		store.mu.Lock()
		store.updateHit = func() { // another writer swaps the ids under the lock
			store.raw = roundTrip(map[string]any{"serverIds": map[string]any{"fs": 2, "github": 1}})
		}
		store.mu.Unlock()
		reply := r.run("disable 1")
		want := `/mcp disable 1 could not be persisted: id 1 no longer names "fs" in the settings file (edited meanwhile); run /mcp for the current ids — state unchanged`
		if !reply.Error || reply.Text != want {
			t.Fatalf("%+v", reply)
		}
		if store.writeCount() != 0 {
			t.Fatal("the toggle wrote although its id names another server now")
		}
	})
	t.Run("write failure", func(t *testing.T) {
		store := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"fs": 1, "github": 2}})}
		r := newRig(t, withStore(store))
		store.mu.Lock()
		store.writeErr = errBoom
		store.mu.Unlock()
		reply := r.run("disable 1")
		if !reply.Error || reply.Text != "/mcp disable 1 could not be persisted: disk full — state unchanged" {
			t.Fatalf("%+v", reply)
		}
		if r.a.gate.Load().disabled("fs") {
			t.Fatal("a failed write changed the gate")
		}
	})
	t.Run("failed id write still renders", func(t *testing.T) {
		store := &memGate{writeErr: errBoom}
		r := newRig(t, withStore(store))
		ov := r.run("")
		if ov.Error || !strings.Contains(ov.Text, "[1] fs (3)") || !strings.Contains(ov.Text, "[2] github (3)") {
			t.Fatalf("overview with a failing store:\n%s", ov.Text)
		}
		if !strings.Contains(r.logs.String(), "could not persist new server ids") {
			t.Fatalf("no warning:\n%s", r.logs)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		r := newRig(t)
		r.run("")
		ctx, cancel := contextCanceled()
		defer cancel()
		reply := r.cmds.Run(ctx, testCaller, "/mcp disable 1")
		if !reply.Error || !strings.Contains(reply.Text, "interrupted before persisting") || r.a.gate.Load().disabled("fs") {
			t.Fatalf("%+v", reply)
		}
	})
}

func TestCorruptSectionIsNormalizedNotFatal(t *testing.T) {
	store := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"github": "x", "fs": 3}, "disabled": []any{3, 3, "y"}})}
	r := newRig(t, withStore(store), withConfig(func(c *Config) { c.Keep = []string{"mcp__fs__*"} }))
	if !strings.Contains(r.logs.String(), "settings section normalized") {
		t.Fatalf("no warning for a corrupt section:\n%s", r.logs)
	}
	// fs (id 3) is disabled; github gets a fresh id on the next /mcp.
	if names := r.names(testCaller); containsName(names, "mcp__fs__read_file") {
		t.Fatalf("a disabled server's kept tool is in the prompt: %v", names)
	}
	if got := errText(t, r.exec(callName, `{"tool":"mcp__fs__read_file","arguments":{"path":"x"}}`)); !strings.Contains(got, `server "fs" is disabled`) {
		t.Fatalf("mcp_call: %q", got)
	}
	r.run("")
	g, _ := normalize(store.stored(), nil)
	if diff := cmp.Diff(gateState{ServerIDs: map[string]int{"fs": 3, "github": 1}, Disabled: []int{3}}, g); diff != "" {
		t.Fatalf("rewritten section (-want +got):\n%s", diff)
	}
}

func TestUnreadableSettingsEnableEverything(t *testing.T) {
	r := newRig(t, withStore(&memGate{loadErr: errBoom}))
	if !strings.Contains(r.logs.String(), "every server counts as enabled") {
		t.Fatalf("no warning:\n%s", r.logs)
	}
	if res := r.exec(callName, `{"tool":"mcp__fs__read_file","arguments":{"path":"x"}}`); res.Err != nil || r.rec.count() != 1 {
		t.Fatalf("call refused: %v", res.Err)
	}
}

func TestLiveGateUpdates(t *testing.T) {
	r := newRig(t, withConfig(func(c *Config) { c.Keep = []string{"mcp__fs__*"} }))
	r.run("") // fs=1, github=2
	// An edit of the settings file outside the host takes effect at once.
	r.store.edit(map[string]any{"serverIds": map[string]any{"fs": 1, "github": 2}, "disabled": []any{1}})
	if names := r.names(testCaller); containsName(names, "mcp__fs__read_file") {
		t.Fatalf("the edit did not fold the kept tool out: %v", names)
	}
	if res := r.exec("mcp__fs__read_file", `{"path":"x"}`); res.Err == nil {
		t.Fatal("the guard did not see the edit")
	}
	if got := errText(t, r.exec(listName, `{"server":"fs"}`)); !strings.Contains(got, "disabled and hidden") {
		t.Fatalf("mcp_list: %q", got)
	}
	r.store.edit(map[string]any{"serverIds": map[string]any{"fs": 1, "github": 2}})
	if res := r.exec("mcp__fs__read_file", `{"path":"x"}`); res.Err != nil {
		t.Fatalf("after re-enable: %v", res.Err)
	}
	if names := r.names(testCaller); !containsName(names, "mcp__fs__read_file") {
		t.Fatalf("the kept tool did not come back: %v", names)
	}
}

func TestGuardNeverRefusesTheMetaTools(t *testing.T) {
	// Under the prefix "mcp_" the meta-tools carry the prefix, beside
	// servers named "list" and "call": disabling those servers must not
	// take the meta-tools down.
	store := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"list": 1, "call": 2}, "disabled": []any{1, 2}})}
	r := newRig(t, withStore(store), withConfig(func(c *Config) { c.Prefix = "mcp_" }), withTools(),
		before(func(reg *tools.Registry, _ *commands.Registry) {
			registerOn(t, reg, nil, "list", fakeTool{"mcp_list__echo", "Echo.", `{"type":"object"}`})
			registerOn(t, reg, nil, "call", fakeTool{"mcp_call__echo", "Echo.", `{"type":"object"}`})
		}))
	for _, name := range []string{listName, callName} {
		if res := r.exec(name, `{}`); res.Err != nil {
			t.Fatalf("%s refused: %v", name, res.Err)
		}
	}
	if res := r.exec("mcp_list__echo", `{}`); res.Err == nil {
		t.Fatal("a disabled server's tool ran")
	}
}

// TestAssemblyChangedFollowsTheDisabledSet: the fold depends on which
// servers are disabled, so every change of that set (by /mcp, by a hand
// edit, or found in the file by an id allocation) announces an assembly
// change, and nothing else about the gate does.
func TestAssemblyChangedFollowsTheDisabledSet(t *testing.T) {
	r := newRig(t)
	var events atomic.Int32
	r.reg.OnAssemblyChange(testScope(t, "follower"), func() { events.Add(1) })
	ids := map[string]any{"fs": 1, "github": 2}
	steps := []struct {
		name string
		do   func()
		want int32
	}{
		{"ids allocated", func() { r.run("") }, 0},
		{"/mcp disable", func() { r.run("disable 2") }, 1},
		{"/mcp disable again", func() { r.run("disable 2") }, 0},
		{"/mcp enable", func() { r.run("enable 2") }, 1},
		{"hand edit disables", func() { r.store.edit(map[string]any{"serverIds": ids, "disabled": []any{1}}) }, 1},
		{"hand edit keeps the set", func() {
			r.store.edit(map[string]any{"serverIds": map[string]any{"fs": 1, "github": 2, "gone": 7}, "disabled": []any{1, 1}})
		}, 0},
		{"hand edit enables", func() { r.store.edit(map[string]any{"serverIds": ids}) }, 1},
		{"an edit the watch has not delivered, read by an id allocation", func() {
			r.store.mu.Lock()
			r.store.raw = roundTrip(map[string]any{"serverIds": ids, "disabled": []any{2}})
			r.store.mu.Unlock()
			register(t, r.reg, nil, fakeTool{"mcp__web__fetch", "Fetch a URL.", `{}`})
			events.Store(0) // the registration is an assembly change of its own
			r.run("")       // allocates web=3 from the file as it is now
		}, 1},
	}
	for _, st := range steps {
		events.Store(0)
		st.do()
		if got := events.Load(); got != st.want {
			t.Errorf("%s: %d assembly changes, want %d", st.name, got, st.want)
		}
	}
	if names := r.names(testCaller); containsName(names, "mcp__github__create_issue") {
		t.Errorf("github, disabled in the file, is still in the prompt: %v", names)
	}
}
