package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

func Example() {
	r := tools.New(nil)
	// The scope of the plugin instance "clock"; a host makes one per
	// instance, and disposing it removes what the instance registered.
	s := host.NewScope(context.Background(), "clock", nil)
	defer s.Dispose(time.Second)
	_, err := r.Register(s, tools.Definition{
		Name:        "mcp__clock__now",
		Description: "Current time",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}}}`),
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			return tools.Output{Value: map[string]string{"time": "12:00"}}, nil
		},
		Origin: tools.Origin{Server: "clock", RawName: "now"},
	})
	if err != nil {
		panic(err)
	}

	// A guard for every MCP tool: the shape a permission system takes.
	r.OnGuard(s, "mcp__*", func(ctx context.Context, call tools.Call) error {
		if call.Caller.Kind == "model" && string(call.Args) != "{}" {
			return errors.New("arguments need approval")
		}
		return nil
	})

	res := r.Execute(context.Background(), tools.Caller{Kind: "model"}, "mcp__clock__now", nil)
	fmt.Println(res.Content[0].Text)
	res = r.Execute(context.Background(), tools.Caller{Kind: "model"}, "mcp__clock__now", json.RawMessage(`{"tz":"UTC"}`))
	fmt.Println(res.Content[0].Text, errors.Is(res.Err, tools.ErrRefused))

	a, _ := r.Assemble(context.Background(), tools.Caller{Kind: "model"})
	js, _ := a.ToolsJSON()
	fmt.Println(string(js))
	// Output:
	// {"time":"12:00"}
	// Error: call to "mcp__clock__now" denied by a guard: arguments need approval true
	// [{"type":"function","function":{"name":"mcp__clock__now","description":"Current time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]
}
