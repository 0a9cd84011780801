package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// AuditConfig is the `audit` key of the policy's config.
type AuditConfig struct {
	// Enabled writes one line per call (default true).
	Enabled bool `yaml:"enabled"`
	// Arguments writes the arguments' values too; without it a line has
	// only their SHA-256 and size, as arguments may hold secrets.
	Arguments bool `yaml:"arguments"`
	// Dir is where the trail is written (default $DSH_HOME/audit).
	Dir string `yaml:"dir"`
	// MaxSize is the size in bytes past which the current file is rotated
	// (default 16 MiB).
	MaxSize int64 `yaml:"maxSize"`
	// Keep is how many rotated files are kept (default 5).
	Keep int `yaml:"keep"`
}

// record builds a call's audit record.
func record(f tools.Finished, withArgs bool) *audit.Record {
	sum := sha256.Sum256(f.Args)
	rec := &audit.Record{
		Time:       f.Started.UTC(),
		Caller:     audit.Caller{Kind: f.Caller.Kind, ID: f.Caller.ID, Auth: f.Caller.Auth},
		Tool:       f.Name,
		ArgsSHA256: hex.EncodeToString(sum[:]),
		ArgsSize:   len(f.Args),
		DurationMs: float64(f.Duration.Microseconds()) / 1000,
	}
	if id := f.Caller.Identity; id != nil {
		rec.Caller.Subject, rec.Caller.Client = id.Subject, id.Client
	}
	if withArgs && json.Valid(f.Args) {
		rec.Args = f.Args
	}
	if d, ok := f.Note(noteKey{}).(rules.Decision); ok {
		rec.Decision, rec.Rule, rec.Answer = d.Action, d.Rule, d.Answer
	}
	if srv, ok := f.Note(serverNoteKey{}).(string); ok {
		rec.Server = srv
	}
	res := f.Result
	rec.ResultSize = resultSize(res)
	var denial *Denial
	switch {
	case res.Err == nil && res.Failed:
		rec.Outcome = "failed"
	case res.Err == nil:
		rec.Outcome = "ok"
	case errors.As(res.Err, &denial):
		rec.Outcome = "refused"
		rec.Error = res.Err.Error()
	case errors.Is(res.Err, tools.ErrUnknownTool):
		rec.Outcome = "unknown"
	case errors.Is(res.Err, tools.ErrRefused):
		rec.Outcome = "refused"
		rec.Error = res.Err.Error()
	case isCanceled(res.Err):
		rec.Outcome = "canceled"
	default:
		rec.Outcome = "error"
		rec.Error = res.Err.Error()
	}
	rec.Error = cut(rec.Error, maxErrorText)
	return rec
}

// maxErrorText bounds an error's text in a line, in characters: the tool's own errors
// may be long, and a line is for finding calls, not reading results.
const maxErrorText = 500

// serverNoteKey is the key of the tool's server among a call's notes.
type serverNoteKey struct{}

// resultSize is the size of a call's result: for an MCP server's result
// (which a gateway relays without model-facing content), the text and
// data of its content blocks as the server sent them; for another tool's,
// its text.
func resultSize(res tools.Result) int {
	n := 0
	if m, ok := res.Value.(tools.MCPResult); ok {
		r := m.MCPCallToolResult()
		if r == nil { // a value made of JSON (a hook's): its blocks' size
			for _, b := range m.MCPContent() {
				n += len(b)
			}
			return n
		}
		for _, c := range r.Content {
			switch c := c.(type) {
			case *mcp.TextContent:
				n += len(c.Text)
			case *mcp.ImageContent:
				n += len(c.Data)
			case *mcp.AudioContent:
				n += len(c.Data)
			case *mcp.EmbeddedResource:
				if c.Resource != nil {
					n += len(c.Resource.Text) + len(c.Resource.Blob)
				}
			}
		}
		return n
	}
	for _, c := range res.Content {
		n += len(c.Text)
	}
	return n
}
