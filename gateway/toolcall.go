package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

// maxImageBytes bounds what one image block may read from the store; the
// store admits far smaller images, so this only guards against a corrupt one.
const maxImageBytes = 64 << 20

// callTool runs one tools/call of the registry's tool public through the
// registry. The request's context carries the client's cancellation to the
// tool, and the tool's progress to the client's progress token.
//
// Every failure is isError with its explanation: the registry's (a
// refusal, a tool's error such as an MCP server's isError, a failed
// validation) and a tool's own failed answer (Output.Failed, as mcp_call's
// refusals).
func (g *Gateway) callTool(ctx context.Context, public string, req *mcp.CallToolRequest, questions *tools.Channels) (*mcp.CallToolResult, error) {
	args, err := arguments(req.Params.Arguments)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	// The server's log messages during the call reach the client at the
	// level it set (go-sdk's Log filters; a 2026-07-28 request carries its
	// own level, which the call's ctx holds).
	// The client's question channels (forwarding's), and its log and
	// progress.
	var ch tools.Channels
	if questions != nil {
		ch = *questions
	}
	if g.logLevels.wants(req) {
		ch.Log = func(m tools.LogMessage) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.Level), Logger: m.Logger, Data: m.Data})
		}
	}
	if token := req.Params.GetProgressToken(); token != nil {
		ch.Progress = func(p tools.Progress) {
			// A client that is gone gets nothing; the call goes on until
			// its own cancellation.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message,
			})
		}
	}
	res := g.reg.Run(ctx, tools.Call{Caller: g.callerOf(req), Name: public, Args: args, Channels: &ch})
	if res.Err != nil {
		if ctx.Err() != nil {
			// The client cancelled or went away: there is no one to tell.
			return nil, ctx.Err()
		}
		return errorResult(res.Err.Error()), nil
	}
	if r, ok := res.Value.(tools.MCPResult); ok {
		if out := r.MCPCallToolResult(); out != nil {
			out.IsError = res.Failed
			return out, nil
		}
		// Made of JSON: decode it once here.
		out, err := passThrough(r)
		if err == nil {
			out.IsError = res.Failed
			return out, nil
		}
		// The gateway's caller passes MCP results through, so there is
		// no model-facing content to fall back on.
		g.logger.Warn("gateway: the MCP result does not decode", "tool", public, "err", err)
		return errorResult(fmt.Sprintf("the result of %q could not be relayed: %v", public, err)), nil
	}
	return &mcp.CallToolResult{Content: g.content(public, res.Content), IsError: res.Failed}, nil
}

// passThrough decodes r's blocks into a result, with go-sdk's own decoder
// of each content type. The blocks are JSON already (the server's, as
// go-sdk encoded them): they are joined as they are, not encoded again.
func passThrough(r tools.MCPResult) (*mcp.CallToolResult, error) {
	blocks, structured := r.MCPContent(), r.MCPStructuredContent()
	n := len(`{"content":[],"structuredContent":}`) + len(structured)
	for _, b := range blocks {
		n += len(b) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"content":[`...)
	for i, b := range blocks {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, b...)
	}
	buf = append(buf, ']')
	if len(structured) > 0 {
		buf = append(buf, `,"structuredContent":`...)
		buf = append(buf, structured...)
	}
	buf = append(buf, '}')
	var out mcp.CallToolResult
	if err := json.Unmarshal(buf, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// arguments normalizes the call's arguments to a JSON object: MCP makes them
// optional, and the registry validates what a tool receives.
func arguments(a any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch v := a.(type) {
	case nil:
	case json.RawMessage:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`{}`), nil
	}
	return raw, nil
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// content maps model-facing content to MCP content: text stays text, an image
// reference becomes image content with the stored bytes. An image that cannot
// be read becomes a text notice in its place, so the rest of the result still
// reaches the client.
func (g *Gateway) content(tool string, in []tools.Content) []mcp.Content {
	out := make([]mcp.Content, 0, len(in))
	for _, c := range in {
		switch c.Type {
		case "text":
			out = append(out, &mcp.TextContent{Text: c.Text})
		case "image":
			img, err := g.image(c.Image)
			if err != nil {
				g.logger.Warn("gateway: image not delivered", "tool", tool, "err", err)
				out = append(out, &mcp.TextContent{Text: fmt.Sprintf("[image unavailable: %v]", err)})
				continue
			}
			out = append(out, img)
		default:
			out = append(out, &mcp.TextContent{Text: fmt.Sprintf("[unsupported content type: %s]", c.Type)})
		}
	}
	return out
}

func (g *Gateway) image(ref *attachments.Ref) (*mcp.ImageContent, error) {
	if ref == nil {
		return nil, errors.New("the image block has no attachment reference")
	}
	store := g.store
	if store == nil {
		return nil, fmt.Errorf("no attachment store is running to read %s", ref.ID)
	}
	rc, stored, err := store.Open(ref.ID)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ref.ID, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref.ID, err)
	}
	if len(data) > maxImageBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", ref.ID, maxImageBytes)
	}
	mime := stored.MediaType
	if mime == "" {
		mime = ref.MediaType
	}
	return &mcp.ImageContent{Data: data, MIMEType: mime}, nil
}
