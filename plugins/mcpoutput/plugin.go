// Package mcpoutput is the mcp-output plugin: the mcp_read_output tool,
// which reads by range the whole text of an MCP tool result that
// mcp-client cut at maxResultBytes and stored in the attachment store. It
// is offered on services/outputs, and registered only while some
// mcp-client instance holds the offer.
package mcpoutput

import (
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/tools"
)

func init() {
	host.Register(host.Definition[struct{}]{
		Name:        outputs.PluginName,
		Description: "the " + outputs.ToolName + " tool, offered while an mcp-client runs: reads by range the whole text of MCP tool results cut at maxResultBytes",
		Builtin:     true,
		Inject:      []host.Dep{host.Require(tools.Key), host.Optional(attachments.Key)},
		Provides:    []host.AnyKey{outputs.Key},
		Apply: func(s *host.Scope, _ struct{}) error {
			var def *tools.Definition
			if store, ok := host.Lookup(s, attachments.Key); ok {
				d := ReadTool(store)
				def = &d
			} else {
				s.SetDetail("no attachment store: cut results are not stored")
			}
			return host.Provide(s, outputs.Key, outputs.NewOffer(s, host.Get(s, tools.Key), def))
		},
	})
}
