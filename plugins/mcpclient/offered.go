package mcpclient

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Why a listed tool is not offered to models.
const (
	unofferedAppOnly      = `its _meta.ui.visibility is ["app"]: only an MCP App's UI may call it, and the host renders no apps`
	unofferedTaskRequired = `its execution.taskSupport is "required", and the host does not support tasks`
)

// unoffered says why no model can use t, or "".
func (c *client) unoffered(t *mcp.Tool) string {
	if appOnly(t.Meta) {
		return unofferedAppOnly
	}
	if c.tasks.required(t.Name) {
		return unofferedTaskRequired
	}
	return ""
}

// appOnly reports whether a tool's _meta.ui.visibility (MCP Apps) leaves
// the model out. No visibility means both model and app.
func appOnly(meta mcp.Meta) bool {
	ui, _ := meta["ui"].(map[string]any)
	vis, ok := ui["visibility"].([]any)
	if !ok || len(vis) == 0 {
		return false
	}
	return !slices.Contains(vis, any("model"))
}

// logUnoffered logs each left-out tool once per reason, not on every
// re-sync.
func (c *client) logUnoffered(name, why string) {
	key := name + "\x00" + why
	if c.unofferedLogged[key] {
		return
	}
	if c.unofferedLogged == nil {
		c.unofferedLogged = map[string]bool{}
	}
	c.unofferedLogged[key] = true
	c.log.Info(c.label+": tool not offered to models: "+why, "tool", name)
}

// taskTools remembers which tools a server lists with
// execution.taskSupport "required". go-sdk v1.8.0's Tool has no execution
// field (it does not support tasks), so the listing is read below it: a
// connection wrapper notes the ids of tools/list requests and reads the
// raw result of their responses only. The answer to a listing's first page
// starts the set afresh, so a tool the server no longer lists leaves it.
type taskTools struct {
	mu sync.Mutex
	// listing holds the tools/list requests awaiting their answer, true
	// for a first page; a new connection starts it afresh.
	listing  map[jsonrpc.ID]bool
	requires map[string]bool
}

func (tt *taskTools) required(name string) bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.requires[name]
}

// watch wraps t so that tt sees its tools/list results.
func (tt *taskTools) watch(t mcp.Transport) mcp.Transport { return &taskWatchTransport{t, tt} }

type taskWatchTransport struct {
	mcp.Transport
	tt *taskTools
}

func (w *taskWatchTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// Requests of an earlier connection are answered never.
	w.tt.mu.Lock()
	w.tt.listing = nil
	w.tt.mu.Unlock()
	return &taskWatchConn{conn, w.tt}, nil
}

type taskWatchConn struct {
	mcp.Connection
	tt *taskTools
}

func (c *taskWatchConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		var params struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(req.Params, &params)
		c.tt.mu.Lock()
		if c.tt.listing == nil {
			c.tt.listing = map[jsonrpc.ID]bool{}
		}
		c.tt.listing[req.ID] = params.Cursor == ""
		c.tt.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *taskWatchConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.tt.mu.Lock()
		if first, ok := c.tt.listing[resp.ID]; ok {
			delete(c.tt.listing, resp.ID)
			if first && resp.Error == nil {
				c.tt.requires = nil
			}
			c.tt.note(resp.Result)
		}
		c.tt.mu.Unlock()
	}
	return msg, err
}

// note records one page of tools/list (tt.mu held).
func (tt *taskTools) note(result json.RawMessage) {
	var page struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &page) != nil {
		return
	}
	for _, t := range page.Tools {
		if t.Execution.TaskSupport == "required" {
			if tt.requires == nil {
				tt.requires = map[string]bool{}
			}
			tt.requires[t.Name] = true
		} else {
			delete(tt.requires, t.Name)
		}
	}
}
