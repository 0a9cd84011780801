package result

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// project maps content blocks to model-facing content: text runs joined
// with "\n", embedded text resources inline after a line naming them,
// resource links with how to read them, and, for each block kept holds
// (the n-th block: an image's reference or diagnostic, a stored audio clip
// or binary resource), what it holds; a diagnostic in place of each such
// block when it holds none. A non-text block splits the text run.
func project(raw, server string, blocks []blockView, kept map[int][]tools.Content) []tools.Content {
	var out []tools.Content
	var run []string
	flush := func() {
		if len(run) > 0 {
			out = append(out, tools.Text(strings.Join(run, "\n")))
			run = nil
		}
	}
	for i, b := range blocks {
		if held, ok := kept[i]; ok {
			for _, block := range held {
				if block.Type == "text" {
					run = append(run, block.Text)
				} else {
					flush()
					out = append(out, block)
				}
			}
			continue
		}
		if !b.object {
			run = append(run, "[unsupported MCP content block: expected an object]")
			continue
		}
		typ := ""
		if b.typ != nil {
			typ = *b.typ
		}
		mime := b.mimeType
		if mime == "" {
			mime = "unknown media type"
		}
		switch typ {
		case "text":
			if b.text != nil {
				run = append(run, *b.text)
			}
		case "image":
			run = append(run, imageDiagnostic(mime, "this result was not admitted to durable model context"))
		case "audio":
			run = append(run, "[audio: "+mime+fmt.Sprintf(", %d bytes", b.size)+"; not stored in this rendering; the raw audio remains available to programmatic callers]")
		case "resource":
			switch {
			case b.text != nil:
				run = append(run, "Resource "+b.uri+" ("+resources.OrUnknownType(b.mimeType)+"):", *b.text)
			case b.blob != nil && utf8.Valid(b.blob):
				run = append(run, "Resource "+b.uri+" ("+resources.OrUnknownType(b.mimeType)+"):", string(b.blob))
			case b.hasBlob:
				run = append(run, fmt.Sprintf("[embedded resource %s: %s, %d bytes; not stored in this rendering; the raw data remains available to programmatic callers]", b.uri, resources.OrUnknownType(b.mimeType), b.size))
			default:
				run = append(run, "[embedded resource unavailable: the MCP block has no resource contents]")
			}
		case "resource_link":
			if b.name == "" || b.uri == "" {
				run = append(run, "[resource link unavailable: the MCP block is missing its name or URI]")
			} else {
				run = append(run, resourceLinkLine(server, b))
			}
		default:
			if b.typ == nil {
				typ = "(missing)"
			}
			run = append(run, "[unsupported MCP content type: "+typ+"]")
		}
	}
	flush()
	visible := false
	for _, b := range out {
		if b.Type != "text" || b.Text != "" {
			visible = true
			break
		}
	}
	if !visible {
		return []tools.Content{tools.Text("(" + raw + " returned no model-visible content)")}
	}
	return out
}

func imageDiagnostic(mime, reason string) string {
	return "[image unavailable: " + mime + "; " + reason + "; raw image data remains available to programmatic callers]"
}

// joinText returns the text of content, one line per block.
func joinText(content []tools.Content) string {
	var parts []string
	for _, b := range content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// truncate cuts model-facing text beyond maxResultBytes, with a marker that
// says how much was dropped and where the rest is: store, when non-nil, is
// given the whole text (the text blocks joined with "\n") and the offset in
// it where the kept text ends, and returns that advice. Image references
// are kept.
func (p *Projector) truncate(content []tools.Content, store func(full string, offset int) string) []tools.Content {
	limit := p.MaxBytes
	total := 0
	for _, b := range content {
		if b.Type == "text" {
			total += len(b.Text)
		}
	}
	if limit <= 0 || total <= limit {
		return content
	}
	out := make([]tools.Content, 0, len(content))
	kept, cut := 0, false
	pos := 0    // where the current block starts in the joined text
	cutAt := -1 // index in out of the cut block
	offset := 0 // where the kept text ends in the joined text
	for _, b := range content {
		if b.Type != "text" {
			out = append(out, b)
			continue
		}
		if cut {
			continue
		}
		if kept+len(b.Text) <= limit {
			out = append(out, b)
			kept += len(b.Text)
			pos += len(b.Text) + 1
			continue
		}
		n := limit - kept
		for n > 0 && !utf8.RuneStart(b.Text[n]) {
			n--
		}
		kept += n
		cut = true
		offset = pos + n
		cutAt = len(out)
		out = append(out, tools.Text(b.Text[:n]))
	}
	advice := "the full result remains available to programmatic callers"
	if store != nil {
		texts := make([]string, 0, len(content))
		for _, b := range content {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		advice = store(strings.Join(texts, "\n"), offset)
	}
	out[cutAt].Text += fmt.Sprintf("\n[output truncated: %d of %d bytes dropped (maxResultBytes %d); %s]", total-kept, total, limit, advice)
	return out
}
