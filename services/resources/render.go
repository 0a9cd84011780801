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
// the rest is cut with a marker that says so (only the canonical value,
// for programmatic callers, keeps all of it).
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
// the store is there and the caller takes images, downscaled to fit the
// store's limits (attachments.Store.SaveFitted) or else kept as a blob;
// any other binary stored as a blob and described by its reference, MIME
// type and size.
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
		case Textual(c.MIMEType) && utf8.Valid(c.Blob):
			run = append(run, fmt.Sprintf("Resource %s (%s):", c.URI, mt), cut(string(c.Blob), &budget))
		default:
			block, note, isImage := r.binary(ctx, caller, c)
			if isImage {
				run = append(run, fmt.Sprintf("Resource %s (%s, %d bytes):", c.URI, mt, len(c.Blob)))
				if note != "" {
					run = append(run, note)
				}
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
	return text[:n] + fmt.Sprintf("\n[resource text truncated: %d of %d bytes dropped; a read shows at most %d bytes of text, and the rest is not kept where a model can read it]",
		len(text)-n, len(text), MaxInlineText)
}

// Textual reports whether a MIME type is text a model can read.
func Textual(mt string) bool {
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

// binary renders one blob: an image reference (true) with a note when it
// was downscaled, or a line saying where the bytes are kept, or why they
// are not.
func (r Renderer) binary(ctx context.Context, caller tools.Caller, c *mcp.ResourceContents) (block tools.Content, note string, isImage bool) {
	mt, _, _ := mime.ParseMediaType(c.MIMEType)
	mt = strings.ToLower(mt)
	if r.Store == nil {
		return tools.Text(fmt.Sprintf("[binary resource %s: %s, %d bytes; not kept: no attachment store is mounted]", c.URI, OrUnknownType(c.MIMEType), len(c.Blob))), "", false
	}
	if imageTypes[mt] && caller.ImageInput {
		fitted, err := r.Store.SaveFitted(ctx, []attachments.Image{{MediaType: mt, Data: c.Blob, Name: c.URI}})
		if err == nil {
			if rs := fitted[0].Resized; rs != nil {
				note = rs.Note()
			}
			return tools.Content{Type: "image", Image: &fitted[0].Ref}, note, true
		}
		// Not an image the store admits, even downscaled: keep the bytes
		// as a blob.
	}
	ref, err := r.Store.SaveBlob(ctx, attachments.Blob{MediaType: c.MIMEType, Data: c.Blob, Name: c.URI})
	if err != nil {
		return tools.Text(fmt.Sprintf("[binary resource %s: %s, %d bytes; not kept: %v]", c.URI, OrUnknownType(c.MIMEType), len(c.Blob), err)), "", false
	}
	return tools.Text(fmt.Sprintf("[binary resource %s: %s, %d bytes, stored as attachment %s]", c.URI, OrUnknownType(c.MIMEType), len(c.Blob), ref.ID)), "", false
}

// OrUnknownType is mt, or "unknown type" when it is empty.
func OrUnknownType(mt string) string {
	if mt == "" {
		return "unknown type"
	}
	return mt
}
