package mcpoutput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Bounds of one read of a stored output.
const (
	defaultOutputRead = 64 << 10
	maxOutputRead     = 1 << 20
)

const outputToolDescription = "Read more of a tool result that was cut at maxResultBytes: the cut text gives the id " +
	"of the stored whole and the offset to go on from. Returns up to length bytes (default 65536, at most 1048576) " +
	"of the stored text from offset, and the offset to continue from."

const outputToolSchema = `{"type":"object","properties":{` +
	`"id":{"type":"string","description":"the stored text's id, sha256:..., from the cut marker"},` +
	`"offset":{"type":"integer","minimum":0,"description":"byte offset to read from (default 0)"},` +
	`"length":{"type":"integer","minimum":1,"maximum":1048576,"description":"bytes to read (default 65536)"}},` +
	`"required":["id"],"additionalProperties":false}`

// OutputSlice is mcp_read_output's value: the text from Offset to End of
// the stored text of Total bytes.
type OutputSlice struct {
	ID     string `json:"id"`
	Offset int64  `json:"offset"`
	End    int64  `json:"end"`
	Total  int64  `json:"total"`
	Text   string `json:"text"`
}

// ReadTool is mcp_read_output over store.
func ReadTool(store *attachments.Store) tools.Definition {
	return tools.Definition{
		Name:        outputs.ToolName,
		Annotations: tools.ReadOnly(),
		Description: outputToolDescription,
		InputSchema: json.RawMessage(outputToolSchema),
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			var in struct {
				ID     string `json:"id"`
				Offset int64  `json:"offset"`
				Length int64  `json:"length"`
			}
			if err := json.Unmarshal(call.Args, &in); err != nil {
				return tools.Output{}, fmt.Errorf("arguments: %w", err)
			}
			slice, err := readOutput(store, in.ID, in.Offset, in.Length)
			if err != nil {
				return tools.Output{}, err
			}
			return tools.Output{Value: slice}, nil
		},
		Render: renderOutput,
	}
}

// readOutput reads [offset, offset+length) of the stored text id, moved to
// whole UTF-8 characters: a start inside a character moves past it, an end
// inside one moves before it, unless that would leave no character at all:
// a read before the end returns at least one.
func readOutput(store *attachments.Store, id string, offset, length int64) (OutputSlice, error) {
	if length <= 0 {
		length = defaultOutputRead
	}
	length = min(length, maxOutputRead)
	if offset < 0 {
		return OutputSlice{}, errors.New("offset must not be negative")
	}
	rc, ref, err := store.Open(id)
	if err != nil {
		return OutputSlice{}, err
	}
	defer rc.Close()
	if offset > ref.Bytes {
		return OutputSlice{}, fmt.Errorf("offset %d is past the end of %s (%d bytes)", offset, id, ref.Bytes)
	}
	ra, ok := rc.(io.ReaderAt)
	if !ok {
		return OutputSlice{}, fmt.Errorf("%s cannot be read by range", id)
	}
	// utf8.UTFMax-1 bytes more on either side find the characters' edges;
	// past a short length, enough for the one whole character a read
	// returns at least.
	start := max(0, offset-(utf8.UTFMax-1))
	buf := make([]byte, min(ref.Bytes, offset+max(length, utf8.UTFMax)+2*(utf8.UTFMax-1))-start)
	if _, err := ra.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return OutputSlice{}, fmt.Errorf("read %s: %w", id, err)
	}
	lo := int(offset - start)
	for lo < len(buf) && !utf8.RuneStart(buf[lo]) {
		lo++
	}
	hi := min(len(buf), int(offset+length-start))
	if hi < len(buf) {
		for hi > lo && !utf8.RuneStart(buf[hi]) {
			hi--
		}
	}
	if hi <= lo && lo < len(buf) {
		// A length shorter than the character at lo still returns that
		// character: an empty read would name the same offset to read on
		// from, and a model would loop on it.
		for hi = lo + 1; hi < len(buf) && !utf8.RuneStart(buf[hi]); hi++ {
		}
	}
	text := buf[lo:max(lo, hi)]
	if !utf8.Valid(text) || bytes.IndexByte(text, 0) >= 0 {
		return OutputSlice{}, fmt.Errorf("%s is not stored text (%s); %s reads the stored output of cut tool results", id, ref.MediaType, outputs.ToolName)
	}
	return OutputSlice{ID: id, Offset: start + int64(lo), End: start + int64(lo) + int64(len(text)), Total: ref.Bytes, Text: string(text)}, nil
}

// renderOutput shows the slice and where to go on.
func renderOutput(v any) []tools.Content {
	s, ok := v.(OutputSlice)
	if !ok {
		b, _ := json.Marshal(v)
		return []tools.Content{tools.Text(string(b))}
	}
	tail := fmt.Sprintf("\n[bytes %d-%d of %d; the end of the stored text]", s.Offset, s.End, s.Total)
	if s.End < s.Total {
		args, _ := json.Marshal(struct {
			ID     string `json:"id"`
			Offset int64  `json:"offset"`
		}{s.ID, s.End})
		tail = fmt.Sprintf("\n[bytes %d-%d of %d; read on with %s %s]", s.Offset, s.End, s.Total, outputs.ToolName, args)
	}
	return []tools.Content{tools.Text(s.Text + tail)}
}
