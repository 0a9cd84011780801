package resources

import (
	"sync"

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
				offer := &offer{s: s, reg: reg, defs: []tools.Definition{listTool(r, reg.Gate), readTool(r, rd, reg.Gate)}}
				r.OnChange(s, func(Change) { offer.update(r) })
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

// offer registers the model-facing tools while some server lists a
// resource or a template, and withdraws them when none does: a host whose
// servers offer nothing to read pays no prompt bytes for them.
type offer struct {
	s    *host.Scope
	reg  *tools.Registry
	defs []tools.Definition

	mu      sync.Mutex
	removes []func()
}

func (o *offer) update(r *Registry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	want := r.offersAnything()
	switch {
	case want && o.removes == nil:
		for _, def := range o.defs {
			remove, err := o.reg.Register(o.s, def)
			if err != nil {
				o.s.Logger().Error("resources: a model-facing tool could not be registered", "tool", def.Name, "err", err)
				continue
			}
			o.removes = append(o.removes, remove)
		}
	case !want && o.removes != nil:
		for _, remove := range o.removes {
			remove()
		}
		o.removes = nil
	}
}
