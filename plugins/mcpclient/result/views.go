package result

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/resources"
)

// blockView is what the projection reads of a content block.
type blockView struct {
	object   bool    // false: the block is not a JSON object
	typ      *string // nil: no type
	text     *string // nil: no text (an embedded resource's text for "resource")
	mimeType string
	name     string
	uri      string
	title    string
	// size is the byte count of an audio block's data or an embedded
	// resource's blob; blob is that blob when its type is textual.
	size    int
	hasBlob bool
	blob    []byte
}

// typedViews views the blocks go-sdk decoded, without re-parsing them.
func typedViews(content []mcp.Content) []blockView {
	views := make([]blockView, len(content))
	for i, c := range content {
		v := blockView{object: true}
		typ := func(s string) { v.typ = &s }
		switch b := c.(type) {
		case *mcp.TextContent:
			typ("text")
			v.text = &b.Text
		case *mcp.ImageContent:
			typ("image")
			v.mimeType = b.MIMEType
		case *mcp.AudioContent:
			typ("audio")
			v.mimeType = b.MIMEType
			v.size = len(b.Data)
		case *mcp.ResourceLink:
			typ("resource_link")
			v.name, v.uri, v.title, v.mimeType = b.Name, b.URI, b.Title, b.MIMEType
		case *mcp.EmbeddedResource:
			typ("resource")
			if r := b.Resource; r != nil {
				v.uri, v.mimeType = r.URI, r.MIMEType
				if r.Blob != nil {
					v.hasBlob, v.size = true, len(r.Blob)
					if resources.Textual(r.MIMEType) {
						v.blob = r.Blob
					}
				} else {
					v.text = &r.Text
				}
			}
		case *mcp.ToolUseContent:
			typ("tool_use")
		case *mcp.ToolResultContent:
			typ("tool_result")
		default:
			typ(fmt.Sprintf("%T", c))
		}
		views[i] = v
	}
	return views
}

// views is what the projection reads of the result's blocks: the decoded
// answer's, or for a value made of JSON, the JSON's.
func (r CallResult) views() []blockView {
	if r.answer != nil {
		return typedViews(r.answer.Content)
	}
	return rawViews(r.encoded().content)
}

// rawViews views canonical JSON blocks (a value to render may come from
// anywhere, for example a post-execute hook).
func rawViews(blocks []json.RawMessage) []blockView {
	views := make([]blockView, len(blocks))
	for i, raw := range blocks {
		var w struct {
			Type     *string `json:"type"`
			Text     *string `json:"text"`
			MIMEType string  `json:"mimeType"`
			Name     string  `json:"name"`
			Title    string  `json:"title"`
			URI      string  `json:"uri"`
			Data     string  `json:"data"`
			Resource *struct {
				URI      string  `json:"uri"`
				MIMEType string  `json:"mimeType"`
				Text     *string `json:"text"`
				Blob     *string `json:"blob"`
			} `json:"resource"`
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &w) != nil {
			continue // not an object
		}
		v := blockView{object: true, typ: w.Type, text: w.Text, mimeType: w.MIMEType, name: w.Name, title: w.Title, uri: w.URI,
			size: base64.StdEncoding.DecodedLen(len(w.Data)) - strings.Count(w.Data, "=")}
		if w.Type != nil && *w.Type == "resource" {
			v.text, v.size = nil, 0
			if r := w.Resource; r != nil {
				v.uri, v.mimeType, v.text = r.URI, r.MIMEType, r.Text
				if r.Blob != nil {
					v.text = nil
					v.hasBlob = true
					v.size = base64.StdEncoding.DecodedLen(len(*r.Blob)) - strings.Count(*r.Blob, "=")
					if resources.Textual(r.MIMEType) {
						v.blob, _ = base64.StdEncoding.DecodeString(*r.Blob)
					}
				}
			}
		}
		views[i] = v
	}
	return views
}
