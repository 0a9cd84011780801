package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// A registry's tools served to an MCP client. Here the client is connected
// in memory; the `gateway` plugin serves Streamable HTTP
// (Gateway.HTTPHandler), and `dsh-host serve --stdio` a session over stdio.
// The gateway, like the tool, lives as long as its scope.
func ExampleNew() {
	ctx := context.Background()
	s := host.NewScope(ctx, "example", nil)
	defer s.Dispose(time.Second)
	reg := tools.New(nil)
	_, err := reg.Register(s, tools.Definition{
		Name:        "greet",
		Description: "Greet someone.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(call.Args, &in); err != nil {
				return tools.Output{}, err
			}
			return tools.Output{Value: "Hello, " + in.Name + "!"}, nil
		},
		Render: func(v any) []tools.Content { return []tools.Content{tools.Text(v.(string))} },
	})
	if err != nil {
		log.Fatal(err)
	}

	g, err := gateway.New(s, reg, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(ctx, serverEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("tool:", tool.Name, "-", tool.Description)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "gateway"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("result:", res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// tool: greet - Greet someone.
	// result: Hello, gateway!
}
