package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// What the web console (internal/webui) asks beyond the listings: one
// tool's schemas for its try-it form, and the composition as loaded with
// the last reload's outcome.

// ToolDetail is one tool as Tools lists it, with its schemas and the
// server's own listing of it.
type ToolDetail struct {
	Tool
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Listing is the tool as its MCP server listed it (title,
	// annotations, _meta...); nil for a tool of no MCP server.
	Listing json.RawMessage `json:"listing,omitempty"`
}

// CompositionInfo is the composition file as it reads now and what the
// host made of its loads.
type CompositionInfo struct {
	File string `json:"file"`
	// Text is the file's content; ReadError says why it could not be read.
	Text      string `json:"text"`
	ReadError string `json:"readError,omitempty"`
	// Applied and Failed count the loads (the first included) that were
	// applied and that did not parse or validate; LastError is the last
	// failure (file:line, entry and key), empty once a load succeeded.
	Applied     int       `json:"applied"`
	Failed      int       `json:"failed"`
	LastError   string    `json:"lastError,omitempty"`
	LastApplied time.Time `json:"lastApplied"`
	// Outcomes says how each entry the last applied load touched came out.
	Outcomes  []host.Outcome        `json:"outcomes,omitempty"`
	Instances []host.InstanceStatus `json:"instances"`
}

// compositionMax bounds the text read: a composition is a page of YAML,
// and a file that is not one must not fill the answer.
const compositionMax = 1 << 20

// ToolRequest names one tool, and the caller it is shown to (as
// ToolsRequest).
type ToolRequest struct {
	Name   string `json:"name"`
	Caller string `json:"caller,omitempty"`
}

// ToolDetail returns the tool req names as req's caller sees it.
func (l *Local) ToolDetail(ctx context.Context, req ToolRequest) (ToolDetail, error) {
	reg, err := l.registry()
	if err != nil {
		return ToolDetail{}, err
	}
	caller, err := frontEnd(req.Caller)
	if err != nil {
		return ToolDetail{}, err
	}
	name := req.Name
	rows, err := ListTools(ctx, reg, caller)
	if err != nil {
		return ToolDetail{}, err
	}
	for _, row := range rows {
		if row.Name != name {
			continue
		}
		def, ok := reg.Get(name)
		if !ok {
			break // unregistered meanwhile
		}
		d := ToolDetail{Tool: row, InputSchema: def.InputSchema, OutputSchema: def.OutputSchema, Listing: def.MCPTool}
		if len(d.OutputSchema) == 0 && len(def.MCPTool) > 0 {
			// An MCP tool's output schema stays in its listing.
			var l struct {
				OutputSchema json.RawMessage `json:"outputSchema"`
			}
			if json.Unmarshal(def.MCPTool, &l) == nil && string(l.OutputSchema) != "null" {
				d.OutputSchema = l.OutputSchema
			}
		}
		return d, nil
	}
	return ToolDetail{}, fmt.Errorf("%w: %q", tools.ErrUnknownTool, name)
}

// Composition returns the composition file and the host's loads of it.
func (l *Local) Composition(context.Context) (CompositionInfo, error) {
	st := l.Host.Reloads()
	info := CompositionInfo{File: l.File, Applied: st.Applied, Failed: st.Failed, LastApplied: st.LastApplied, Outcomes: st.Outcomes, Instances: l.Host.Status()}
	if st.LastError != nil {
		info.LastError = st.LastError.Error()
	}
	text, err := readBounded(l.File, compositionMax)
	if err != nil {
		info.ReadError = err.Error()
	}
	info.Text = text
	return info, nil
}

// readBounded reads at most limit bytes of file, saying so when there
// were more. It opens without blocking and reads a regular file only: a
// composition given as a FIFO (a shell's <(...)) was read by its load,
// and opening it again would wait for a writer that never comes.
func readBounded(file string, limit int64) (string, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file: its text is not shown", file)
	}
	buf, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(buf)) > limit {
		return string(buf[:limit]), fmt.Errorf("%s is over %d bytes: only its start is shown", file, limit)
	}
	return string(buf), nil
}
