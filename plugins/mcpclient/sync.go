package mcpclient

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// capInstructions returns the server's instructions, cut to
// maxInstructionBytes with a marker.
func (c *client) capInstructions(res *mcp.InitializeResult) string {
	if res == nil || res.Instructions == "" {
		return ""
	}
	text := res.Instructions
	if len(text) <= maxInstructionBytes {
		return text
	}
	cut := maxInstructionBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	c.opt.logger.Warn(c.label+": server instructions exceed 32 KiB; the rest is dropped", "bytes", len(text))
	return text[:cut] + fmt.Sprintf("\n[instructions truncated: %d more bytes dropped]", len(text)-cut)
}

// assemble adds the server's instructions to the model's prompt as the
// section "mcp:<serverName>".
func (c *client) assemble(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
	c.mu.Lock()
	text := c.shared.instructions
	c.mu.Unlock()
	if text != "" {
		a.Sections = append(slices.Clip(a.Sections), tools.Section{
			Name: "mcp:" + c.opt.cfg.ServerName,
			Text: "### MCP server: " + c.opt.cfg.ServerName + "\n\n" + text,
		})
	}
	if next == nil {
		return a, nil
	}
	return next(ctx, a)
}
