package policy

import (
	"context"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestHidesByIdentity: a rule whose `when` the caller's identity decides
// shapes what each caller is offered: a tool allowed to a group only is
// hidden from the others, and offered when the arguments still decide.
func TestHidesByIdentity(t *testing.T) {
	reg := tools.New(nil)
	s := host.NewScope(t.Context(), "test", nil)
	t.Cleanup(func() { _ = s.Dispose(0) })
	ok := func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "ok"}, nil }
	for _, name := range []string{"deploy", "restart", "read", "drop", "purge"} {
		if _, err := reg.Register(s, tools.Definition{Name: name, Execute: ok}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.Audit.Enabled = false
	if err := yamlv3.Unmarshal([]byte(`
default: allow
rules:
  - tools: [deploy]
    when: '"admins" in caller.groups'
    action: allow
  - tools: [deploy]
    action: deny
  - tools: [restart]
    when: '"ops" in caller.groups && args.force == true'
    action: allow
  - tools: [restart]
    action: deny
  - tools: [drop]
    when: 'caller.subject != "alice"'
    action: deny
  - tools: [purge]
    when: 'caller.groups[0] != "admins"'
    action: deny
`), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := ValidateConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	p, err := New(reg, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	caller := func(subject string, groups ...string) tools.Caller {
		return tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Subject: subject, Groups: groups}}
	}
	for _, c := range []struct {
		caller tools.Caller
		tool   string
		hidden bool
	}{
		{caller("alice", "admins"), "deploy", false},
		{caller("bob", "devs"), "deploy", true},
		{tools.Caller{Kind: tools.CallerGateway}, "deploy", true},
		// ops: the arguments decide, so it is offered (and the guard decides).
		{caller("carol", "ops"), "restart", false},
		{caller("bob", "devs"), "restart", true},
		{caller("bob", "devs"), "read", false},
		{caller("alice"), "drop", false},
		{caller("bob"), "drop", true},
		// A when over the caller alone that fails (no groups) denies
		// every call: not offered, as the gate closes doors so.
		{caller("bob"), "purge", true},
		{caller("alice", "admins"), "purge", false},
		{tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Any: true}}, "purge", false},
		// A surface for every identity lists what some identity may call.
		{tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Any: true}}, "deploy", false},
		{tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Any: true}}, "drop", false},
	} {
		def, _ := reg.Get(c.tool)
		if got := p.hides(c.caller, &def); got != c.hidden {
			t.Errorf("%+v, %s: hidden %v, want %v", c.caller.Identity, c.tool, got, c.hidden)
		}
	}
	// The guard agrees with the listing.
	for _, tool := range []string{"deploy", "purge"} {
		if d := p.Decide(tools.Call{Caller: caller("bob"), Name: tool, Args: []byte(`{}`)}); d.Action != rules.Deny {
			t.Errorf("bob calls %s: %+v, want deny", tool, d)
		}
	}
}
