package main

// Printing of the one-shot subcommands. The tables they share with the
// console are internal/console's; toolRow and writeTools, which tests
// use, name them here.

import (
	"encoding/json"
	"io"

	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/services/tools"
)

type toolRow = console.Tool

func writeTools(w io.Writer, rows []toolRow) { console.WriteTools(w, rows) }

// callResult is what `call --json` prints.
type callResult struct {
	Tool    string          `json:"tool"`
	Content []tools.Content `json:"content"`
	Value   any             `json:"value"`
	Error   string          `json:"error,omitempty"`
	Refused bool            `json:"refused,omitempty"`
	// Failed: the tool answered with its own explanation of a failure
	// (tools.Result.Failed, such as mcp_call's refusals): content says why.
	Failed bool `json:"failed,omitempty"`
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
