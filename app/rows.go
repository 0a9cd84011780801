package app

import (
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// InstanceRow is one instance as a command's --json prints it, with field
// names scripts rely on (docs/commands.md): host.InstanceStatus's, typed,
// empty ones left out.
type InstanceRow struct {
	ID     string     `json:"id"`
	Plugin string     `json:"plugin"`
	State  host.State `json:"state"`
	Since  time.Time  `json:"since"`
	// Error is the instance's failure, or what a pending one waits for.
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Kept: the entry's new config failed; its previous one runs.
	Kept string `json:"kept,omitempty"`
	// Endpoint is the URL the instance serves at (a gateway's /mcp).
	Endpoint string `json:"endpoint,omitempty"`
	// Lazy: it starts its work on first use; Dormant: its work is
	// stopped until a call wakes it.
	Lazy    bool `json:"lazy,omitempty"`
	Dormant bool `json:"dormant,omitempty"`
	// LastError is the last failure it retries or recovers from on its own.
	LastError string `json:"lastError,omitempty"`
	// Sandbox says how its child processes are confined.
	Sandbox string `json:"sandbox,omitempty"`
	// Transport is how it reaches its MCP server (stdio, streamable-http,
	// sse); "" for an in-process plugin.
	Transport string `json:"transport,omitempty"`
	// Reconnects counts its reconnect attempts since its run started.
	Reconnects int        `json:"reconnects,omitempty"`
	Claims     []ClaimRow `json:"claims,omitempty"`
}

// ClaimRow is a name an instance holds (host.Claim): a serverName and the
// prefix of its tools, or one tool.
type ClaimRow struct {
	Kind       string `json:"kind"`
	Value      string `json:"value"`
	ToolPrefix string `json:"toolPrefix,omitempty"`
}

// Rows is st as --json prints it; never nil, so that an empty list
// prints as [].
func Rows(st []host.InstanceStatus) []InstanceRow {
	rows := make([]InstanceRow, 0, len(st))
	for _, s := range st {
		r := InstanceRow{ID: s.ID, Plugin: s.Plugin, State: s.State, Since: s.Since, Error: s.Err, Detail: s.Detail, Kept: s.Kept,
			Endpoint: s.Endpoint, Lazy: s.Lazy, Dormant: s.Dormant, LastError: s.LastError, Sandbox: s.Sandbox,
			Transport: s.Transport, Reconnects: s.Reconnects}
		for _, c := range s.Claims {
			r.Claims = append(r.Claims, ClaimRow{Kind: c.Kind, Value: c.Value, ToolPrefix: c.ToolPrefix})
		}
		rows = append(rows, r)
	}
	return rows
}
