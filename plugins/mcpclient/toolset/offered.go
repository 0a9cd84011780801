package toolset

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/wire"
)

// Why a listed tool is not offered to models.
const (
	unofferedAppOnly      = `its _meta.ui.visibility is ["app"]: only an MCP App's UI may call it, and the host renders no apps`
	unofferedTaskRequired = `its execution.taskSupport is "required", and the host does not support tasks`
)

// unoffered says why no model can use t, or "".
func (s *Set) unoffered(t *mcp.Tool) string {
	if appOnly(t.Meta) {
		return unofferedAppOnly
	}
	if s.tasks.required(t.Name) {
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
func (s *Set) logUnoffered(name, why string) {
	key := name + "\x00" + why
	if s.unofferedLogged[key] {
		return
	}
	if s.unofferedLogged == nil {
		s.unofferedLogged = map[string]bool{}
	}
	s.unofferedLogged[key] = true
	s.opt.Log.Info(s.opt.Label+": tool not offered to models: "+why, "tool", name)
}

// Tasks remembers which tools a server lists with
// execution.taskSupport "required". go-sdk v1.8.0's Tool has no execution
// field (it does not support tasks; docs/upstream.md), so the listing is
// read on the wire (Wire): the answer to a listing's first page starts the
// set afresh, so a tool the server no longer lists leaves it.
type Tasks struct {
	mu       sync.Mutex
	requires map[string]bool
}

func (tt *Tasks) required(name string) bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.requires[name]
}

// Wire is tt's subscriber to the wire (package wire): the answers to
// tools/list.
func (tt *Tasks) Wire() wire.Subscriber {
	return wire.Subscriber{Methods: []string{"tools/list"}, Received: tt.onListing}
}

func (tt *Tasks) onListing(m wire.Message) {
	if m.Response == nil || m.Response.Error != nil {
		return
	}
	var params struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(m.Request.Params, &params) // the client's own: none is the first page
	tools := listedTasks(m.Response.Result)
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if params.Cursor == "" {
		tt.requires = nil
	}
	for name, required := range tools {
		if !required {
			delete(tt.requires, name)
			continue
		}
		if tt.requires == nil {
			tt.requires = map[string]bool{}
		}
		tt.requires[name] = true
	}
}

// listedTasks reads a tools/list result: whether each tool's
// execution.taskSupport is "required". Members are matched as go-sdk
// matches the Tool's (wire.Member): a server's tool named in a way go-sdk
// would not read is not one it lists.
func listedTasks(result json.RawMessage) map[string]bool {
	raw, _ := wire.Member(result, "tools")
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return nil
	}
	out := make(map[string]bool, len(tools))
	for _, t := range tools {
		var name, support string
		if v, ok := wire.Member(t, "name"); !ok || json.Unmarshal(v, &name) != nil {
			continue
		}
		exec, _ := wire.Member(t, "execution")
		if v, ok := wire.Member(exec, "taskSupport"); ok {
			_ = json.Unmarshal(v, &support)
		}
		out[name] = out[name] || support == "required"
	}
	return out
}

// names returns the tools that require tasks, sorted.
func (tt *Tasks) names() []string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	out := make([]string, 0, len(tt.requires))
	for n := range tt.requires {
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// set replaces the tools that require tasks (from the catalog cache).
func (tt *Tasks) set(names []string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.requires = nil
	for _, n := range names {
		if tt.requires == nil {
			tt.requires = map[string]bool{}
		}
		tt.requires[n] = true
	}
}
