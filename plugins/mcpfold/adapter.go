package mcpfold

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/logins"
	"github.com/dsh-host/dsh-host/services/tools"
)

// adapter is one mcp-fold instance: the meta-tools, the fold, the guard and
// the /mcp command, over the collaborators it is given.
type adapter struct {
	rules    *rules
	reg      *tools.Registry
	store    gateStore // nil without the settings service
	instance string    // the scope id the meta-tools are registered under
	log      *slog.Logger

	// gate is the last known gate state (never nil after newAdapter).
	gate atomic.Pointer[gateState]
	// live is true once this adapter's meta-tools are registered; with
	// Origin.Instance it tells them from foreign tools of the same names.
	live atomic.Bool
	// done is the scope's context: cancelled at dispose, before anything
	// registered is undone, so a restarted instance of the same id is never
	// taken for this one.
	done context.Context

	// persistMu serializes the adapter's own writes of the gate state.
	persistMu sync.Mutex

	docs docCache

	// logins are the OAuth logins of running servers (/mcp login); nil
	// without the logins service.
	logins *logins.Registry
	// cmds runs the policy's /policy trust for /mcp trust; nil without
	// the commands service.
	cmds *commands.Registry
}

func newAdapter(reg *tools.Registry, cfg Config, store gateStore, instance string, log *slog.Logger) (*adapter, error) {
	r, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	a := &adapter{rules: r, reg: reg, store: store, instance: instance, log: log}
	a.gate.Store(&gateState{ServerIDs: map[string]int{}})
	return a, nil
}

// start loads the gate state and registers everything on s: the meta-tools
// and, only when both registered, the fold; the guard that enforces
// disabled servers; the /mcp command when cmds is non-nil.
func (a *adapter) start(s *host.Scope, cmds *commands.Registry) error {
	a.done = s.Context()
	if a.store != nil {
		// Watch first, so that no edit between the read and the watch is lost.
		a.store.watch(s, func(g gateState, problems []string, err error) {
			if err != nil {
				a.log.Warn("mcp-fold: settings file unreadable; keeping the last good gate state", "err", err)
				return
			}
			a.setGate(g, problems)
		})
		g, problems, err := a.store.load()
		if err != nil {
			a.log.Warn("mcp-fold: could not read the settings section; every server counts as enabled until it reads again",
				"section", section, "err", err)
		} else {
			a.setGate(g, problems)
		}
	}

	if err := a.registerMeta(s); err != nil {
		a.log.Warn(fmt.Sprintf("mcp-fold: meta-tool registration failed (%v) — keeping the full-schema prompt passthrough", err))
		s.SetDetail("fail-open: meta-tools not registered")
	} else {
		a.reg.OnAssemble(s, a.assemble)
		s.SetDetail("folding " + a.rules.prefix + "* tools behind mcp_list/mcp_call")
	}

	a.reg.OnGuard(s, a.rules.prefix+"*", a.guard)
	a.reg.OnChange(s, func(c tools.Change) {
		if c.Kind == tools.Unregistered {
			a.docs.forget(c.Name)
		}
	})

	a.cmds = cmds
	if cmds == nil {
		a.log.Info("mcp-fold: no commands service; /mcp is unavailable (folding and the meta-tools work)")
		return nil
	}
	if _, err := cmds.Register(s, a.command()); err != nil {
		a.log.Warn("mcp-fold: /mcp not registered; folding and the meta-tools work", "err", err)
	}
	return nil
}

func (a *adapter) setGate(g gateState, problems []string) {
	if len(problems) > 0 {
		a.log.Warn("mcp-fold: settings section normalized; invalid entries ignored", "section", section, "problems", strings.Join(problems, "; "))
	}
	if a.storeGate(g) {
		a.reg.AssemblyChanged()
	}
}

// storeGate makes g the gate state and reports whether the set of disabled
// servers changed: the fold, and so the assembly, depends on it. The caller
// then calls AssemblyChanged, outside its own locks.
func (a *adapter) storeGate(g gateState) bool {
	if g.ServerIDs == nil {
		g.ServerIDs = map[string]int{}
	}
	old := a.gate.Swap(&g)
	return old == nil || !maps.Equal(old.disabledServers(), g.disabledServers())
}

// registerMeta registers both meta-tools, or neither. They go with s.
func (a *adapter) registerMeta(s *host.Scope) error {
	unList, err := a.reg.Register(s, tools.Definition{
		Name: listName, Description: listDescription, InputSchema: json.RawMessage(listSchema),
		Execute: failures(a.list), Render: renderValue, Annotations: tools.ReadOnly(),
		// A sloppy call is answered with a hint (list.go, call); the tool
		// an mcp_call reaches has its arguments checked by the registry.
		ChecksArguments: true,
	})
	if err != nil {
		return err
	}
	if _, err := a.reg.Register(s, tools.Definition{
		Name: callName, Description: callDescription, InputSchema: json.RawMessage(callSchema),
		// No annotations: what a call does is its target's, which the
		// listing cannot say in advance.
		Execute: failures(a.call), Render: renderValue, ChecksArguments: true, Dispatches: true,
	}); err != nil {
		unList()
		return err
	}
	a.live.Store(true)
	return nil
}

// own reports whether the meta-tools registered now are this adapter's.
func (a *adapter) own() bool {
	if !a.live.Load() || a.done.Err() != nil {
		return false
	}
	for _, n := range [...]string{listName, callName} {
		def, ok := a.reg.Get(n)
		if !ok || def.Origin.Instance != a.instance {
			return false
		}
	}
	return true
}

// metaVisible reports whether both meta-tools are among items.
func metaVisible[T any](items []T, name func(T) string) bool {
	var l, c bool
	for _, it := range items {
		n := name(it)
		l = l || n == listName
		c = c || n == callName
	}
	return l && c
}

func schemaName(s tools.Schema) string         { return s.Name }
func definitionName(d tools.Definition) string { return d.Name }

// assemble is the fold, in the assembly waterfall. It folds only when the
// meta-tools are this adapter's own and the caller can see them; otherwise,
// and when nothing folds, it returns the assembly it got, untouched.
func (a *adapter) assemble(ctx context.Context, in tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
	out, err := next(ctx, in)
	if err != nil {
		return out, err
	}
	if !a.own() || !metaVisible(out.Tools, schemaName) {
		return out, nil
	}
	g := a.gate.Load()
	var kept []tools.Schema
	for i, t := range out.Tools {
		if a.judgeName(t.Name, g) != fold {
			if kept != nil {
				kept = append(kept, t)
			}
			continue
		}
		if kept == nil {
			kept = make([]tools.Schema, i, len(out.Tools)-1)
			copy(kept, out.Tools[:i])
		}
	}
	if kept == nil {
		return out, nil
	}
	out.Tools = kept
	return out, nil
}

// judgeName judges the assembled tool name. The assembly carries names
// only; the registry has each MCP tool's server.
func (a *adapter) judgeName(name string, g *gateState) verdict {
	if isMeta(name) || !a.rules.isMCP(name) {
		return native // spares a look-up for every native tool
	}
	return a.rules.judge(a.definition(name), g)
}

// definition returns the registered tool called name, or a definition
// with the name alone (not an MCP tool) when none is registered: a tool
// unregistered meanwhile stays out of folding, catalog and gates.
func (a *adapter) definition(name string) tools.Definition {
	if d, ok := a.reg.Get(name); ok {
		return d
	}
	return tools.Definition{Name: name}
}

// guard refuses any call, direct or through mcp_call, to a disabled
// server's tools.
func (a *adapter) guard(_ context.Context, call tools.Call) error {
	server := a.rules.serverOf(a.definition(call.Name))
	if server == "" {
		return nil
	}
	g := a.gate.Load()
	if g.disabled(server) {
		return fmt.Errorf("server %q is disabled — ask the operator to run \"/mcp enable %d\" to restore it", server, g.idOf(server))
	}
	return nil
}

// mcpTools returns the MCP tools caller can see (serverOf: under the prefix,
// declared by a server, meta-tools excluded), in name order.
func (a *adapter) mcpTools(caller tools.Caller) []tools.Definition {
	all := a.reg.List(caller) // a fresh slice: filter it in place
	out := all[:0]
	for _, d := range all {
		if a.rules.serverOf(d) != "" {
			out = append(out, d)
		}
	}
	return out
}

// group is one server's tools, in first-seen order.
type group struct {
	server string
	tools  []tools.Definition
}

func (a *adapter) groups(defs []tools.Definition) []group {
	var out []group
	index := map[string]int{}
	for _, d := range defs {
		s := a.rules.serverOf(d)
		i, ok := index[s]
		if !ok {
			i = len(out)
			index[s] = i
			out = append(out, group{server: s})
		}
		out[i].tools = append(out[i].tools, d)
	}
	return out
}

// parameters returns a definition's input schema as the model sees it.
func parameters(d tools.Definition) json.RawMessage {
	if len(d.InputSchema) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return d.InputSchema
}

// renderValue renders a meta-tool value: an error as its plain text, any
// other value as indented JSON, without HTML escaping (the model reads it:
// "<" costs a token where "\u003c" costs several).
func renderValue(v any) []tools.Content {
	if e, ok := v.(errorValue); ok {
		return []tools.Content{tools.Text(e.String())}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return []tools.Content{tools.Text(fmt.Sprint(v))}
	}
	return []tools.Content{tools.Text(strings.TrimSuffix(b.String(), "\n"))}
}

// errorValue is a meta-tool's answer to a request it cannot serve: a value,
// not a Go error, so the model gets plain, actionable text.
type errorValue struct {
	Error       string          `json:"error"`
	DidYouMean  []string        `json:"didYouMean,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

func (e errorValue) String() string {
	var b strings.Builder
	b.WriteString(e.Error)
	if len(e.DidYouMean) > 0 {
		b.WriteString(" — did you mean ")
		for i, n := range e.DidYouMean {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", n)
		}
		b.WriteString("?")
	}
	if len(e.InputSchema) > 0 {
		b.WriteString("\ninputSchema:\n")
		b.WriteString(indentJSON(e.InputSchema))
	}
	return b.String()
}

func indentJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// failures marks a meta-tool's errorValue answers as failed outputs: the
// model reads the same text, and a caller that reports outcomes (a
// gateway's isError, dsh-host call's exit code) sees a failure.
func failures(execute func(context.Context, tools.Call) (tools.Output, error)) func(context.Context, tools.Call) (tools.Output, error) {
	return func(ctx context.Context, call tools.Call) (tools.Output, error) {
		out, err := execute(ctx, call)
		if _, ok := out.Value.(errorValue); ok {
			out.Failed = true
		}
		return out, err
	}
}

func fail(format string, args ...any) (tools.Output, error) {
	return tools.Output{Value: errorValue{Error: fmt.Sprintf(format, args...)}}, nil
}
