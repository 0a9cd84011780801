package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Actions a rule (or the default) takes.
const (
	Allow = "allow"
	Ask   = "ask"
	Deny  = "deny"
)

func actions() []string { return []string{Allow, Ask, Deny} }

// What a rule does when its `when` cannot be evaluated (Rule.OnError).
const (
	OnErrorApply = "apply"
	OnErrorSkip  = "skip"
)

// callerKinds are the caller kinds a rule may name.
func callerKinds() []string {
	return []string{tools.CallerConsole, tools.CallerChat, tools.CallerCall, tools.CallerGateway, tools.CallerUI}
}

// annotationKeys are the MCP tool annotations a rule may match.
func annotationKeys() []string {
	return []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
}

// Rule is one rule. Every condition it sets must hold; a condition it
// leaves out holds for every call.
type Rule struct {
	// Tools are name globs (`*` matches any run): mcp__github__*.
	Tools []string `yaml:"tools"`
	// Servers are MCP serverNames (globs too); a tool of no MCP server
	// matches none.
	Servers []string `yaml:"servers"`
	// Callers are caller kinds: console, chat, call, gateway, ui.
	Callers []string `yaml:"callers"`
	// Annotations are the MCP tool's hints, with the spec's defaults for
	// hints a server leaves out; a tool of no MCP server matches none.
	Annotations map[string]bool `yaml:"annotations"`
	// Kinds are the doors of a server the rule covers: tools, resources
	// (and resource templates), prompts; all of them when left out
	// (gate.go).
	Kinds []string `yaml:"kinds"`
	// When is a CEL expression over args, tool, server and caller.
	When string `yaml:"when"`
	// Action is allow, ask or deny.
	Action string `yaml:"action"`
	// OnError is what a deny or ask rule does when its When cannot be
	// evaluated (a missing key, a wrong type, arguments that cannot be
	// read): apply (the default: the policy fails closed) or skip. An
	// allow rule never applies on an error.
	OnError string `yaml:"onError"`

	line  int         // the rule's line in its file, 0 when built in code
	prog  cel.Program // When, compiled by Validate
	reads celVars     // the variables When reads
}

// ruleKeys are the keys a rule may have, for the strict decode.
func ruleKeys() []string {
	return []string{"tools", "servers", "callers", "annotations", "kinds", "when", "action", "onError"}
}

// UnmarshalYAML decodes a rule strictly and keeps its line, which a
// denial names.
func (r *Rule) UnmarshalYAML(n *yamlv3.Node) error {
	if n.Kind == yamlv3.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; !slices.Contains(ruleKeys(), k) {
				return fmt.Errorf("line %d: unknown key %q in a rule (a rule has %s)", n.Content[i].Line, k, strings.Join(ruleKeys(), ", "))
			}
		}
	}
	type plain Rule // without this method
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = Rule(p)
	r.line = n.Line
	return nil
}

func (r *Rule) check(env *celEnv, key string) []error {
	var errs []error
	switch {
	case r.Action == "":
		errs = append(errs, host.KeyErrorf(key, "a rule needs an action: %s", strings.Join(actions(), ", ")))
	case !slices.Contains(actions(), r.Action):
		errs = append(errs, host.KeyErrorf(key+".action", "unknown action %q; want %s", r.Action, strings.Join(actions(), ", ")))
	}
	for i, kind := range r.Callers {
		if !slices.Contains(callerKinds(), kind) {
			errs = append(errs, host.KeyErrorf(fmt.Sprintf("%s.callers[%d]", key, i), "unknown caller %q; callers are %s", kind, strings.Join(callerKinds(), ", ")))
		}
	}
	for name := range r.Annotations {
		if !slices.Contains(annotationKeys(), name) {
			errs = append(errs, host.KeyErrorf(key+".annotations."+name, "unknown annotation %q; want %s", name, strings.Join(annotationKeys(), ", ")))
		}
	}
	errs = append(errs, r.checkKinds(key)...)
	for i, glob := range r.Tools {
		if glob == "" {
			errs = append(errs, host.KeyErrorf(fmt.Sprintf("%s.tools[%d]", key, i), "an empty glob matches no tool"))
		}
	}
	for i, glob := range r.Servers {
		if glob == "" {
			errs = append(errs, host.KeyErrorf(fmt.Sprintf("%s.servers[%d]", key, i), "an empty glob matches no server"))
		}
	}
	// An empty list reads as "none" to a person and as "any" to the
	// matcher (a condition left out holds for every call): refuse it.
	for _, c := range []struct {
		key string
		set bool
	}{{"tools", r.Tools != nil && len(r.Tools) == 0}, {"servers", r.Servers != nil && len(r.Servers) == 0},
		{"callers", r.Callers != nil && len(r.Callers) == 0}, {"annotations", r.Annotations != nil && len(r.Annotations) == 0}} {
		if c.set {
			errs = append(errs, host.KeyErrorf(key+"."+c.key, "an empty %s would match every call, not none; leave the key out to match all, or list what it covers", c.key))
		}
	}
	switch {
	case r.OnError == "":
	case r.OnError != OnErrorApply && r.OnError != OnErrorSkip:
		errs = append(errs, host.KeyErrorf(key+".onError", "unknown value %q; want %s or %s", r.OnError, OnErrorApply, OnErrorSkip))
	case strings.TrimSpace(r.When) == "":
		errs = append(errs, host.KeyErrorf(key+".onError", "a rule without when has nothing that can fail; remove onError"))
	case r.Action == Allow && r.OnError == OnErrorApply:
		errs = append(errs, host.KeyErrorf(key+".onError", "an allow rule never applies when its when fails (the policy fails closed); use skip or remove onError"))
	}
	r.prog, r.reads = nil, 0
	if strings.TrimSpace(r.When) != "" {
		prog, reads, err := env.compile(r.When)
		if err != nil {
			errs = append(errs, host.KeyErrorf(key+".when", "%v", err))
		}
		r.prog, r.reads = prog, reads
	}
	return errs
}

// Check validates rs and compiles their `when` expressions in place;
// each problem is a *host.KeyError naming its key (rules[2].when).
func Check(rs []Rule) []error {
	var env celEnv
	var errs []error
	for i := range rs {
		errs = append(errs, rs[i].check(&env, fmt.Sprintf("rules[%d]", i))...)
	}
	return errs
}

// Actions lists the actions a rule (or the default) may take.
func Actions() []string { return actions() }

// CallerKinds lists the caller kinds a rule may name.
func CallerKinds() []string { return callerKinds() }
