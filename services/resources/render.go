package resources

import (
	"context"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

// MaxInlineText bounds the text of one read that goes inline to the model;
// the rest is cut with a marker (the canonical value keeps all of it).
const MaxInlineText = 1 << 20

// Renderer turns resource contents into model-facing content. Its zero
// value renders without an attachment store: images and binaries are
// described, not kept.
type Renderer struct {
	// Store keeps images and other binary content; nil when none is mounted.
	Store *attachments.Store
}

// Contents renders the contents of a read (or of an embedded resource) for
// caller: text inline after a line naming its URI and type; a text-typed
// blob that is valid UTF-8 as text; an image as a durable reference when
// the store is there and the caller takes images; any other binary stored
// as a blob and described by its reference, MIME type and size.
func (r Renderer) Contents(ctx context.Context, caller tools.Caller, contents []*mcp.ResourceContents) []tools.Content {
	var out []tools.Content
	var run []string
	flush := func() {
		if len(run) > 0 {
			out = append(out, tools.Text(strings.Join(run, "\n")))
			run = nil
		}
	}
	budget := MaxInlineText
	for _, c := range contents {
		if c == nil {
			continue
		}
		mt := c.MIMEType
		if mt == "" {
			mt = "unknown type"
		}
		switch {
		case c.Blob == nil:
			run = append(run, fmt.Sprintf("Resource %s (%s):", c.URI, mt), cut(c.Text, &budget))
		case textual(c.MIMEType) && utf8.Valid(c.Blob):
			run = append(run, fmt.Sprintf("Resource %s (%s):", c.URI, mt), cut(string(c.Blob), &budget))
		default:
			block, isImage := r.binary(ctx, caller, c)
			if isImage {
				run = append(run, fmt.Sprintf("Resource %s (%s, %d bytes):", c.URI, mt, len(c.Blob)))
				flush()
				out = append(out, block)
			} else {
				run = append(run, block.Text)
			}
		}
	}
	flush()
	if len(out) == 0 {
		return []tools.Content{tools.Text("(the resource has no contents)")}
	}
	return out
}

// cut returns text within what is left of budget, with a marker when cut.
func cut(text string, budget *int) string {
	if len(text) <= *budget {
		*budget -= len(text)
		return text
	}
	n := max(*budget, 0)
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	*budget = 0
	return text[:n] + fmt.Sprintf("\n[resource text truncated: %d of %d bytes dropped (%d bytes inline at most); the canonical value keeps it whole]",
		len(text)-n, len(text), MaxInlineText)
}

// textual reports whether a MIME type is text the model can read.
func textual(mt string) bool {
	t, _, err := mime.ParseMediaType(mt)
	if err != nil {
		return false
	}
	if strings.HasPrefix(t, "text/") {
		return true
	}
	switch t {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml", "application/javascript", "application/toml":
		return true
	}
	return strings.HasSuffix(t, "+json") || strings.HasSuffix(t, "+xml")
}

// imageTypes are the image types models take.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// binary renders one blob: an image reference (true), or a line saying
// where the bytes are kept, or why they are not.
func (r Renderer) binary(ctx context.Context, caller tools.Caller, c *mcp.ResourceContents) (tools.Content, bool) {
	mt, _, _ := mime.ParseMediaType(c.MIMEType)
	mt = strings.ToLower(mt)
	if r.Store == nil {
		return tools.Text(fmt.Sprintf("[binary resource %s: %s, %d bytes; not kept: no attachment store is mounted]", c.URI, orUnknown(c.MIMEType), len(c.Blob))), false
	}
	if imageTypes[mt] && caller.ImageInput {
		refs, err := r.Store.SaveImages(ctx, []attachments.Image{{MediaType: mt, Data: c.Blob, Name: c.URI}})
		if err == nil {
			return tools.Content{Type: "image", Image: &refs[0]}, true
		}
		// Not an image the store admits: keep the bytes as a blob.
	}
	ref, err := r.Store.SaveBlob(ctx, attachments.Blob{MediaType: c.MIMEType, Data: c.Blob, Name: c.URI})
	if err != nil {
		return tools.Text(fmt.Sprintf("[binary resource %s: %s, %d bytes; not kept: %v]", c.URI, orUnknown(c.MIMEType), len(c.Blob), err)), false
	}
	return tools.Text(fmt.Sprintf("[binary resource %s: %s, %d bytes, stored as attachment %s]", c.URI, orUnknown(c.MIMEType), len(c.Blob), ref.ID)), false
}

func orUnknown(mt string) string {
	if mt == "" {
		return "unknown type"
	}
	return mt
}
