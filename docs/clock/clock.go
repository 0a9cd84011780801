// Package clock is the plugin of docs/writing-plugins.md; settings.yaml may say clock: {layout: "15:04"}.
package clock

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

type config struct {
	Zone string `yaml:"zone"` // for a call that names none; UTC when empty
}

type args struct {
	Zone string `json:"zone,omitempty" jsonschema:"an IANA time zone; the entry's when empty"`
}

func init() {
	host.Register(host.Definition[config]{
		Name:   "example-clock",
		Inject: []host.Dep{host.Require(tools.Key), host.Require(settings.Key), host.Optional(commands.Key)},
		Validate: func(c *config) error {
			if _, err := time.LoadLocation(c.Zone); err != nil { // a local, read-only look-up
				return host.KeyErrorf("zone", "%w; use an IANA name such as Asia/Tokyo", err)
			}
			return nil
		},
		Apply: func(s *host.Scope, cfg config) error {
			now := func(_ context.Context, zone string) (string, error) {
				p, _, err := settings.Read[struct{ Layout string }](host.Get(s, settings.Key), "clock")
				loc, zerr := time.LoadLocation(cmp.Or(zone, cfg.Zone))
				return time.Now().In(cmp.Or(loc, time.UTC)).Format(cmp.Or(p.Layout, time.Kitchen)), errors.Join(err, zerr)
			}
			if cmds, ok := host.Lookup(s, commands.Key); ok {
				if _, err := cmds.Register(s, commands.Command{Name: s.ID(), Usage: "[zone]", Handler: commands.Func(now)}); err != nil {
					return err
				}
			}
			_, err := host.Get(s, tools.Key).Register(s, tools.Func(s.ID()+"_now", "The time now.",
				func(ctx context.Context, in args) (any, error) { return now(ctx, in.Zone) }))
			return err
		},
	})
}
