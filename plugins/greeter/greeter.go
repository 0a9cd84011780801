// Package greeter is the example plugin of the default composition: one
// tool, greet.
package greeter

import (
	"context"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

type config struct {
	Greeting string `yaml:"greeting"`
}

type args struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

func init() {
	host.Register(host.Definition[config]{
		Name:        "greeter",
		Description: "example plugin: a greet tool",
		Inject:      []host.Dep{host.Require(tools.Key)},
		Defaults:    func() config { return config{Greeting: "Hello"} },
		// The tool's name is fixed: two greeter entries would fight over
		// it, so a second one is a config error naming the first.
		Claims: func(*config) []host.Claim { return []host.Claim{{Kind: "tool", Value: "greet"}} },
		Apply: func(s *host.Scope, cfg config) error {
			// The tool belongs to s: it goes away when the instance does.
			_, err := host.Get(s, tools.Key).Register(s, tools.Func("greet", "Greet someone by name.",
				func(_ context.Context, in args) (any, error) { return cfg.Greeting + ", " + in.Name + "!", nil }))
			return err
		},
	})
}
