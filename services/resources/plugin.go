package resources

import (
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Config is the configuration of the built-in `resources` plugin; it has no
// keys.
type Config struct{}

func init() {
	host.Register(host.Definition[Config]{
		Name:        "resources",
		Description: "MCP resources and templates of every server: the resources service, the mcp_resources and mcp_read tools, /resources and /read",
		Builtin:     true,
		Provides:    []host.AnyKey{Key},
		Inject:      []host.Dep{host.Optional(tools.Key), host.Optional(commands.Key), host.Optional(attachments.Key)},
		Apply: func(s *host.Scope, _ Config) error {
			r := New(&Options{Logger: s.Logger()})
			store, _ := host.Lookup(s, attachments.Key)
			rd := Renderer{Store: store}
			if reg, ok := host.Lookup(s, tools.Key); ok {
				for _, def := range []tools.Definition{listTool(r), readTool(r, rd)} {
					if _, err := reg.Register(s, def); err != nil {
						return err
					}
				}
			}
			if cmds, ok := host.Lookup(s, commands.Key); ok {
				for _, c := range []commands.Command{listCommand(r), readCommand(r, rd)} {
					if _, err := cmds.Register(s, c); err != nil {
						return err
					}
				}
			}
			return host.Provide(s, Key, r)
		},
	})
}
