package result

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Projector maps one server's tool results to model content.
type Projector struct {
	// Server is the serverName, Label the instance's name in logs.
	Server, Label string
	Log           *slog.Logger
	// Registry tells whether a resource link can be read (by the
	// resources service's read tool); nil: never.
	Registry *tools.Registry
	// Store keeps images, audio, binaries and the whole text of cut
	// results; nil: none is kept.
	Store *attachments.Store
	// Output is mcp-output's offer of the tool that reads a cut result
	// back; nil: a cut names no tool.
	Output *outputs.Offer
	// MaxBytes caps the model-facing text (maxResultBytes; 0: no cap).
	MaxBytes int
}

// Render returns the pure render of canonical values: one text block, and
// a diagnostic in place of each image, audio clip and embedded binary
// (those reach model content only from Execute, after durable storage),
// cut at maxResultBytes without storing the whole.
func (p *Projector) Render(raw string) func(any) []tools.Content {
	return func(v any) []tools.Content {
		switch r := v.(type) {
		case CallResult:
			return p.truncate(project(raw, p.linkServer(), r.views(), nil), nil)
		case *CallResult:
			if r != nil {
				return p.truncate(project(raw, p.linkServer(), r.views(), nil), nil)
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return []tools.Content{tools.Text(fmt.Sprintf("[unrenderable value: %v]", err))}
		}
		return p.truncate([]tools.Content{tools.Text(string(b))}, nil)
	}
}

// Model maps a successful result to model content: images admitted
// (and downscaled to fit), audio and embedded binaries stored, text inline,
// then cut at maxResultBytes with the whole text stored for
// mcp_read_output.
func (p *Projector) Model(ctx context.Context, caller tools.Caller, raw string, content []mcp.Content) []tools.Content {
	kept := p.keepBlocks(ctx, caller, raw, content)
	out := project(raw, p.linkServer(), typedViews(content), kept)
	return p.truncate(out, func(full string, offset int) string { return p.storeFull(ctx, raw, full, offset) })
}

// keepBlocks stores what of content needs the attachment store, and returns
// what each such block (by index) becomes in model content.
func (p *Projector) keepBlocks(ctx context.Context, caller tools.Caller, raw string, content []mcp.Content) map[int][]tools.Content {
	var kept map[int][]tools.Content
	hold := func(i int, cs ...tools.Content) {
		if kept == nil {
			kept = map[int][]tools.Content{}
		}
		kept[i] = cs
	}
	var imgs []*mcp.ImageContent
	var at []int
	for i, b := range content {
		switch b := b.(type) {
		case *mcp.ImageContent:
			imgs = append(imgs, b)
			at = append(at, i)
		case *mcp.AudioContent:
			hold(i, tools.Text(p.keepAudio(ctx, raw, b)))
		case *mcp.EmbeddedResource:
			if r := b.Resource; r != nil && r.Blob != nil && !(resources.Textual(r.MIMEType) && utf8.Valid(r.Blob)) {
				hold(i, p.keepEmbedded(ctx, caller, raw, r)...)
			}
		}
	}
	if len(imgs) > 0 {
		for n, cs := range p.admitImages(ctx, caller, raw, imgs) {
			hold(at[n], cs...)
		}
	}
	return kept
}

// keepAudio stores an audio block and describes it: MIME type, duration
// when the format says it (WAV), size, and the attachment that holds it.
func (p *Projector) keepAudio(ctx context.Context, raw string, a *mcp.AudioContent) string {
	desc := resources.OrUnknownType(a.MIMEType)
	if d, ok := wavDuration(a.Data); ok {
		desc += fmt.Sprintf(", %.2f s", d)
	}
	desc += fmt.Sprintf(", %d bytes", len(a.Data))
	id, err := p.saveBlob(ctx, raw, attachments.Blob{MediaType: a.MIMEType, Data: a.Data})
	if err != nil {
		return "[audio: " + desc + "; not kept: " + err.Error() + "]"
	}
	return "[audio: " + desc + "; stored as attachment " + id + "]"
}

// keepEmbedded keeps an embedded resource's binary contents: an image, for
// a caller that takes images, as an image reference (downscaled to fit, as
// a tool's images are, and the resources service's), anything else, or an
// image the store refuses, as a blob.
func (p *Projector) keepEmbedded(ctx context.Context, caller tools.Caller, raw string, r *mcp.ResourceContents) []tools.Content {
	if mt, ok := imageType(r.MIMEType); ok && p.Store != nil && caller.ImageInput && sniff(mt, r.Blob) {
		fitted, err := p.Store.SaveFitted(ctx, []attachments.Image{{MediaType: mt, Data: r.Blob, Name: r.URI}})
		if err == nil {
			head := fmt.Sprintf("Resource %s (%s, %d bytes):", r.URI, mt, len(r.Blob))
			if rs := fitted[0].Resized; rs != nil {
				head += "\n" + rs.Note()
			}
			return []tools.Content{tools.Text(head), {Type: "image", Image: &fitted[0].Ref}}
		}
	}
	return []tools.Content{tools.Text(p.keepBinary(ctx, raw, r))}
}

// keepBinary stores an embedded resource's binary contents and describes
// them.
func (p *Projector) keepBinary(ctx context.Context, raw string, r *mcp.ResourceContents) string {
	desc := fmt.Sprintf("%s: %s, %d bytes", r.URI, resources.OrUnknownType(r.MIMEType), len(r.Blob))
	id, err := p.saveBlob(ctx, raw, attachments.Blob{MediaType: r.MIMEType, Data: r.Blob, Name: r.URI})
	if err != nil {
		return "[embedded resource " + desc + "; not kept: " + err.Error() + "]"
	}
	return "[embedded resource " + desc + "; stored as attachment " + id + "]"
}

// saveBlob stores b and returns its attachment id, or an error worded for
// the model.
func (p *Projector) saveBlob(ctx context.Context, raw string, b attachments.Blob) (string, error) {
	if p.Store == nil {
		return "", fmt.Errorf("%s", reasonNoStore)
	}
	if _, _, err := mime.ParseMediaType(b.MediaType); err != nil {
		b.MediaType = "" // sniffed instead: a bad declaration should not lose the data
	}
	ref, err := p.Store.SaveBlob(ctx, b)
	if err != nil {
		if !attachments.IsAdmissionError(err) && ctx.Err() == nil {
			p.Log.Warn(p.Label+": durable storage of a result block failed", "tool", raw, "err", err)
		}
		return "", err
	}
	return ref.ID, nil
}

// storeFull stores the whole text of a cut result and tells the model how
// to read the rest of it.
func (p *Projector) storeFull(ctx context.Context, raw, full string, offset int) string {
	// Without a way for the model to read the rest, the text says why
	// it is gone rather than pointing at data no model can reach.
	switch {
	case p.Store == nil:
		return "the rest is not kept: " + reasonNoStore
	case p.Output == nil || !p.Output.Offers():
		return "the rest is not kept: no " + outputs.ToolName + " tool is offered to read it (the " + outputs.PluginName + " plugin is not running)"
	}
	id, err := p.saveBlob(ctx, raw, attachments.Blob{MediaType: "text/plain; charset=utf-8", Data: []byte(full)})
	if err != nil {
		return "the rest could not be stored: " + err.Error()
	}
	args, _ := json.Marshal(struct {
		ID     string `json:"id"`
		Offset int    `json:"offset"`
	}{id, offset})
	return fmt.Sprintf("the whole text (%d bytes) is stored: read the rest with %s %s", len(full), outputs.ToolName, args)
}

// linkServer is the server a resource link's read names, or "" while no
// read tool is registered (the resources service offers it only while some
// server lists something to read): a link then says nothing of reading.
func (p *Projector) linkServer() string {
	if p.Registry == nil {
		return ""
	}
	if _, ok := p.Registry.Get(resources.ReadToolName); !ok {
		return ""
	}
	return p.Server
}

// resourceLinkLine describes a resource link and, when server is not "",
// how to read it.
func resourceLinkLine(server string, b blockView) string {
	line := "Resource link: " + b.name
	if b.title != "" && b.title != b.name {
		line += " — " + b.title
	}
	line += " (" + b.uri
	if b.mimeType != "" {
		line += ", " + b.mimeType
	}
	if server == "" {
		return line + ")"
	}
	args, _ := json.Marshal(struct {
		URI    string `json:"uri"`
		Server string `json:"server"`
	}{b.uri, server})
	return line + "); read it with " + resources.ReadToolName + " " + string(args)
}

// wavDuration returns the length in seconds of a RIFF/WAVE clip, from its
// fmt chunk's byte rate and its data chunk's size.
func wavDuration(b []byte) (float64, bool) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return 0, false
	}
	var byteRate uint32
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), binary.LittleEndian.Uint32(b[p+4:p+8])
		body := p + 8
		switch id {
		case "fmt ":
			if body+12 > len(b) {
				return 0, false
			}
			byteRate = binary.LittleEndian.Uint32(b[body+8 : body+12])
		case "data":
			if byteRate == 0 {
				return 0, false
			}
			n := min(uint64(size), uint64(len(b)-body))
			return float64(n) / float64(byteRate), true
		}
		next := uint64(body) + uint64(size) + uint64(size&1)
		if next > uint64(len(b)) {
			return 0, false
		}
		p = int(next)
	}
	return 0, false
}

// ToolError is the error of a result the server marked isError: its text,
// projected as for the model (nothing is stored).
func (p *Projector) ToolError(raw string, res *mcp.CallToolResult) error {
	return errors.New(joinText(project(raw, p.linkServer(), typedViews(res.Content), nil)))
}
