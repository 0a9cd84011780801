package clock

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// example-clock-zones offers a resource, clock://zones, and a prompt, meet (/<id>_meet).
func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "example-clock-zones",
		Inject: []host.Dep{host.Require(resources.Key), host.Optional(commands.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			read := func(_ context.Context, uri string, _ *tools.Channels) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "UTC\nAsia/Tokyo\n"}}}, nil
			}
			get := func(_ context.Context, _ string, args map[string]string, _ *tools.Channels) (*mcp.GetPromptResult, error) {
				text := "Find a meeting time that suits " + args["zones"] + "."
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
			}
			src, err := host.Get(s, resources.Key).Register(s, resources.Provider{Server: s.ID(), Read: read, GetPrompt: get})
			if err != nil {
				return err
			}
			src.Set([]*mcp.Resource{{URI: "clock://zones", Name: "zones", MIMEType: "text/plain"}}, nil)
			meet := resources.Prompt{Public: s.ID() + "_meet", Prompt: mcp.Prompt{Name: "meet", Arguments: []*mcp.PromptArgument{{Name: "zones", Required: true}}}}
			src.SetPrompts([]resources.Prompt{meet})
			if cmds, ok := host.Lookup(s, commands.Key); ok {
				_, err = cmds.Register(s, resources.PromptCommand{Prompt: meet, Get: get}.Command())
			}
			return err
		},
	})
}
