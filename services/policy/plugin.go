package policy

import (
	"context"
	"strconv"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// PluginName is the built-in policy plugin; its instance's id is the same.
const PluginName = "policy"

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "who may call what: ordered allow/ask/deny rules on every tool call (tools, servers, annotations, callers, CEL)",
		Inject:      []host.Dep{host.Require(tools.Key)},
		Builtin:     true,
		Defaults:    DefaultConfig,
		Validate:    ValidateConfig,
		Apply:       apply,
	})
}

func apply(s *host.Scope, cfg Config) error {
	reg, _ := host.Lookup(s, tools.Key)
	p, err := New(reg, cfg, s.EntryFile())
	if err != nil {
		return err
	}
	reg.OnChange(s, func(tools.Change) { p.toolsChanged() })
	reg.OnGuard(s, "*", p.Guard)
	if cfg.Audit.Enabled {
		log, err := OpenAudit(cfg.Audit.Dir, cfg.Audit.MaxSize, cfg.Audit.Keep)
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
	n := len(cfg.Rules)
	switch n {
	case 0:
		return "no rules, default " + cfg.Default
	case 1:
		return "1 rule, default " + cfg.Default
	}
	return strconv.Itoa(n) + " rules, default " + cfg.Default
}
