package mcpfold

import (
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/logins"
	"github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// PluginName is the name composition entries use.
const PluginName = "mcp-fold"

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "folds MCP tool schemas out of the prompt behind mcp_list/mcp_call; the /mcp command",
		Inject:      []host.Dep{host.Require(tools.Key), host.Optional(settings.Key), host.Optional(commands.Key), host.Optional(logins.Key)},
		Defaults:    Defaults,
		Validate:    (*Config).Validate,
		Apply:       apply,
	})
}

func apply(s *host.Scope, cfg Config) error {
	var store gateStore
	if st, ok := host.Lookup(s, settings.Key); ok {
		store = settingsGate{st: st}
	}
	a, err := newAdapter(host.Get(s, tools.Key), cfg, store, s.ID(), s.Logger())
	if err != nil {
		return err
	}
	a.logins, _ = host.Lookup(s, logins.Key)
	cmds, _ := host.Lookup(s, commands.Key)
	return a.start(s, cmds)
}
