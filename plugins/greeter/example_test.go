package greeter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

type shoutConfig struct {
	Suffix string `yaml:"suffix"`
}

// applyShout is a plugin's Apply kept as a named function, so that a test
// can run it on a scope of its own, without a host.
func applyShout(s *host.Scope, cfg shoutConfig) error {
	_, err := host.Get(s, tools.Key).Register(s, tools.Definition{
		Name:        "shout",
		Description: "Return the text in upper case.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			var in struct{ Text string }
			err := json.Unmarshal(call.Args, &in)
			return tools.Output{Value: strings.ToUpper(in.Text) + cfg.Suffix}, err
		},
	})
	return err
}

// Example_scope tests a plugin's Apply with host.NewScope and a registry of
// its own: provide what the plugin injects, apply, call, dispose.
func Example_scope() {
	ctx := context.Background()
	reg := tools.New(nil)
	s := host.NewScope(ctx, "shout", nil)
	if err := host.Provide(s, tools.Key, reg); err != nil {
		panic(err)
	}
	if err := applyShout(s, shoutConfig{Suffix: "!"}); err != nil {
		panic(err)
	}
	res := reg.Execute(ctx, tools.Caller{Kind: "test"}, "shout", json.RawMessage(`{"text":"hi"}`))
	// A string value reaches the model as its plain text.
	fmt.Println(res.Content[0].Text, res.Err)
	def, _ := reg.Get("shout")
	fmt.Println("origin:", def.Origin.Instance)

	s.Dispose(time.Second)
	_, ok := reg.Get("shout")
	fmt.Println("registered after dispose:", ok)
	// Output:
	// HI! <nil>
	// origin: shout
	// registered after dispose: false
}
