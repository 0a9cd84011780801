package mcpclient

import "github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"

// PublicToolName is the model-facing name of a server's tool,
// mcp__<serverName>__<tool>, made safe for the function-name contract
// (toolset.PublicName).
func PublicToolName(serverName, rawName string) string {
	return toolset.PublicName(serverName, rawName)
}
