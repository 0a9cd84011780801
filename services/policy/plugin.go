package policy

import (
	"context"
	"strconv"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/settings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// PluginName is the built-in policy plugin; its instance's id is the same.
const PluginName = "policy"

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "who may call what: ordered allow/ask/deny rules on every tool call (tools, servers, annotations, callers, CEL)",
		Inject: []host.Dep{host.Require(tools.Key), host.Optional(elicit.Key),
			host.Optional(settings.Key), host.Optional(commands.Key)},
		Builtin: true,
		// An edit starts the new rules beside the old ones: disposing
		// first would let calls through unguarded until the new instance
		// is up (and leave none if it failed).
		Overlap:  true,
		Defaults: DefaultConfig,
		Validate: ValidateConfig,
		Lint:     func(cfg *Config, claims []host.Claim) []host.LintWarning { return rules.Lint(cfg.Rules, claims) },
		Apply:    apply,
	})
}

func apply(s *host.Scope, cfg Config) error {
	reg, _ := host.Lookup(s, tools.Key)
	cfg.Pins.Dir = host.EntryPath(s.EntryFile(), cfg.Pins.Dir)
	cfg.Audit.Dir = host.EntryPath(s.EntryFile(), cfg.Audit.Dir)
	p, err := New(reg, cfg, s.EntryFile())
	if err != nil {
		return err
	}
	p.logger = s.Logger()
	p.console = consoleAsks{file: s.CompositionFile(), timeout: cfg.AskTimeout}
	if p.console.timeout == 0 {
		p.console.timeout = DefaultAskTimeout
	}
	if p.metrics, err = newDecisions(s.Registerer()); err != nil {
		return err
	}
	p.approvals.elicit, _ = host.Lookup(s, elicit.Key)
	if st, ok := host.Lookup(s, settings.Key); ok {
		p.approvals.settings = st
		settings.Watch(st, s, SettingsSection, func(v Approvals, err error) {
			if err == nil {
				p.SetAlways(v.Allow)
			}
		})
		v, _, err := settings.Read[Approvals](st, SettingsSection)
		if err != nil {
			p.logger.Warn("policy: the saved approvals cannot be read; asks are asked again", "err", err)
		}
		p.SetAlways(v.Allow)
	}
	if cmds, ok := host.Lookup(s, commands.Key); ok {
		if _, err := cmds.Register(s, p.command(cfg)); err != nil {
			return err
		}
	}
	reg.OnChange(s, func(tools.Change) { p.rules.ToolsChanged() })
	// Beside the instance it replaces, the registry holds this guard back
	// until the swap, and then drops the old one in the same step.
	reg.OnGuard(s, "*", p.Guard)
	// Hiding only shapes lists: a staged instance hides nothing; from the
	// swap until the old one is disposed, both hide.
	reg.OnHide(s, func(caller tools.Caller, d *tools.Definition) bool {
		return !s.Staged() && p.hides(caller, d)
	})
	// Resources and prompts: the same staging as hiding.
	reg.OnGate(s, func(caller tools.Caller, server, kind string) error {
		if s.Staged() {
			return nil
		}
		return p.Gate(caller, server, kind)
	})
	if !cfg.Audit.Enabled && mayAsk(cfg) {
		// Calls keep notes only with a finish hook: the answer to
		// mcp_call's ask reaches the tool it calls through them.
		reg.OnFinish(s, "*", func(context.Context, tools.Finished) {})
	}
	if cfg.Audit.Enabled {
		log, err := audit.Open(cfg.Audit.Dir, cfg.Audit.MaxSize, cfg.Audit.Keep)
		if err != nil {
			return err
		}
		s.OnDispose("audit trail", log.Close)
		logger := s.Logger()
		reg.OnFinish(s, "*", func(_ context.Context, f tools.Finished) {
			if err := log.Write(record(f, cfg.Audit.Arguments)); err != nil {
				logger.Warn("policy: a call is missing from the audit trail", "tool", f.Name, "err", err)
			}
		})
	}
	s.SetDetail(detail(cfg))
	return nil
}

func detail(cfg Config) string {
	s := strconv.Itoa(len(cfg.Rules)) + " rules"
	switch len(cfg.Rules) {
	case 0:
		s = "no rules"
	case 1:
		s = "1 rule"
	}
	s += ", default " + cfg.Default
	if rules.ChatDefault(cfg.Rules) {
		s += "; chat asks before a tool not marked readOnlyHint"
	}
	return s
}

// mayAsk reports whether cfg can decide an ask.
func mayAsk(cfg Config) bool {
	if cfg.Default == rules.Ask || rules.ChatDefault(cfg.Rules) {
		return true
	}
	for _, r := range cfg.Rules {
		if r.Action == rules.Ask {
			return true
		}
	}
	return false
}
