// Package greeter is the example plugin of docs/writing-plugins.md.
package greeter

import (
	"context"
	"encoding/json"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

type config struct {
	Greeting string `yaml:"greeting"`
}

func init() {
	host.Register(host.Definition[config]{
		Name:        "greeter",
		Description: "example plugin: a greet tool",
		Inject:      []host.Dep{host.Require(tools.Key)},
		Defaults:    func() config { return config{Greeting: "Hello"} },
		Apply: func(s *host.Scope, cfg config) error {
			// The tool belongs to s: it goes away when the instance does.
			_, err := host.Get(s, tools.Key).Register(s, tools.Definition{
				Name:        "greet",
				Description: "Greet someone by name.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
				Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
					var in struct{ Name string }
					err := json.Unmarshal(call.Args, &in)
					return tools.Output{Value: cfg.Greeting + ", " + in.Name + "!"}, err
				},
			})
			return err
		},
	})
}
