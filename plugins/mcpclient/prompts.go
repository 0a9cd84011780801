package mcpclient

import "github.com/dsh-host/dsh-host/plugins/mcpclient/bridge"

// PublicPromptName is the slash command a server's prompt becomes, without
// the slash (bridge.PublicPromptName).
func PublicPromptName(serverName, prompt string) string {
	return bridge.PublicPromptName(serverName, prompt)
}
