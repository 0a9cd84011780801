package result

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// CallResult is the canonical value of a successful MCP tool call, what
// programmatic callers get: every content block and structuredContent as
// the server sent them, as go-sdk decoded them (MCPCallToolResult) and as
// JSON (MCPContent, MCPStructuredContent, MarshalJSON: go-sdk re-encodes
// them, so image and audio data are canonical base64).
//
// The JSON is made on first ask and kept: a gateway serves the decoded
// answer and the model reads the blocks' typed views, so most calls never
// encode a block again (for an image, a whole base64 encode). A value is
// immutable; a hook that replaces a result makes one with NewCallResult.
type CallResult struct {
	// answer is the result as go-sdk decoded it; nil for a value made of
	// JSON.
	answer *mcp.CallToolResult
	json   *resultJSON
}

var _ tools.MCPResult = CallResult{}

// resultJSON is a result's JSON, shared by the copies of one value.
type resultJSON struct {
	once       sync.Once
	content    []json.RawMessage
	structured json.RawMessage
}

// NewCallResult returns a result made of content blocks and
// structuredContent (nil for none), each JSON. The value keeps content
// as it is: it must not be modified after.
func NewCallResult(content []json.RawMessage, structured json.RawMessage) CallResult {
	return CallResult{json: &resultJSON{content: content, structured: structured}}
}

// FromAnswer is the value of a server's answer.
func FromAnswer(res *mcp.CallToolResult) CallResult {
	return CallResult{answer: res, json: &resultJSON{}}
}

// encoded returns the result's JSON, encoding the answer, if the value
// has one, the first time.
func (r CallResult) encoded() *resultJSON {
	if r.json == nil { // the zero value
		return &resultJSON{}
	}
	if r.answer == nil { // made of JSON
		return r.json
	}
	r.json.once.Do(func() {
		r.json.content = make([]json.RawMessage, 0, len(r.answer.Content))
		for i, b := range r.answer.Content {
			raw, err := b.MarshalJSON()
			if err != nil {
				// Not seen from go-sdk's own decoding; said in the block
				// rather than dropped.
				raw, _ = json.Marshal(&mcp.TextContent{Text: fmt.Sprintf("[block %d of the result cannot be encoded: %v]", i, err)})
			}
			r.json.content = append(r.json.content, raw)
		}
		if r.answer.StructuredContent != nil {
			// Decoded from JSON (maps, slices, numbers, strings), it
			// encodes.
			r.json.structured, _ = json.Marshal(r.answer.StructuredContent)
		}
	})
	return r.json
}

// MCPContent returns the result's content blocks, each as JSON
// (tools.MCPResult: a gateway passes them to its clients). The slice is
// the value's, shared by its copies: read it, do not modify it.
func (r CallResult) MCPContent() []json.RawMessage { return r.encoded().content }

// MCPStructuredContent returns the result's structuredContent as JSON,
// nil when the server sent none.
func (r CallResult) MCPStructuredContent() json.RawMessage { return r.encoded().structured }

// MCPCallToolResult returns a new result with the blocks and
// structuredContent as go-sdk decoded them from the server's answer
// (tools.MCPResult: a gateway serves them as they are, without decoding
// the JSON again), or nil for a value made of JSON.
func (r CallResult) MCPCallToolResult() *mcp.CallToolResult {
	if r.answer == nil {
		return nil
	}
	return &mcp.CallToolResult{Content: r.answer.Content, StructuredContent: r.answer.StructuredContent}
}

// MarshalJSON encodes the result as {"content":[...],"structuredContent":...}.
func (r CallResult) MarshalJSON() ([]byte, error) {
	j := r.encoded()
	content := j.content
	if content == nil {
		content = []json.RawMessage{}
	}
	return json.Marshal(struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	}{content, j.structured})
}
