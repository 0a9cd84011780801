package result

import (
	"bytes"
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Reasons an image stays out of model content.
const (
	reasonBadType     = "the declared media type is not PNG, JPEG, WebP, or GIF"
	reasonEmpty       = "the image data is empty"
	reasonMismatch    = "the image bytes do not match the declared media type"
	reasonSibling     = "another image in the same result was invalid"
	reasonNoStore     = "no attachment store is mounted"
	reasonNoInput     = "the caller does not accept image input"
	reasonCanceled    = "the tool call was canceled before image storage"
	reasonStorage     = "durable image storage rejected the result"
	reasonAdmissionAt = "image admission rejected the result: "
)

// admitImages checks the whole batch, downscales what is over the store's
// limits, then stores it all-or-nothing, and returns what each image
// becomes in model content: a durable reference (after a note when it was
// downscaled), or (for every image, on any refusal) a diagnostic that says
// why.
//
// Downscaling happens here rather than in SaveImages so that the store
// keeps admitting exactly the bytes it is given, validated as one batch:
// the fitted images go through the same checks and the same atomic write.
func (p *Projector) admitImages(ctx context.Context, caller tools.Caller, raw string, imgs []*mcp.ImageContent) [][]tools.Content {
	refuse := func(reasons []string) [][]tools.Content {
		out := make([][]tools.Content, len(imgs))
		for n, im := range imgs {
			mime := im.MIMEType
			if mime == "" {
				mime = "unknown media type"
			}
			out[n] = []tools.Content{tools.Text(imageDiagnostic(mime, reasons[n]))}
		}
		return out
	}
	all := func(reason string) []string {
		r := make([]string, len(imgs))
		for i := range r {
			r[i] = reason
		}
		return r
	}

	batch := make([]attachments.Image, len(imgs))
	reasons := make([]string, len(imgs))
	invalid := false
	for i, im := range imgs {
		mediaType, ok := imageType(im.MIMEType)
		switch {
		case !ok:
			reasons[i] = reasonBadType
		case len(im.Data) == 0:
			reasons[i] = reasonEmpty
		case !sniff(mediaType, im.Data):
			reasons[i] = reasonMismatch
		default:
			batch[i] = attachments.Image{MediaType: mediaType, Data: im.Data}
			continue
		}
		invalid = true
	}
	if invalid {
		for i := range reasons {
			if reasons[i] == "" {
				reasons[i] = reasonSibling
			}
		}
		return refuse(reasons)
	}
	switch {
	case p.Store == nil:
		return refuse(all(reasonNoStore))
	case !caller.ImageInput:
		return refuse(all(reasonNoInput))
	case ctx.Err() != nil:
		return refuse(all(reasonCanceled))
	}
	refs, err := p.Store.SaveFitted(ctx, batch)
	if err != nil {
		if attachments.IsAdmissionError(err) {
			return refuse(all(reasonAdmissionAt + err.Error()))
		}
		if ctx.Err() != nil {
			return refuse(all(reasonCanceled))
		}
		p.Log.Warn(p.Label+": durable image storage failed", "tool", raw, "err", err)
		return refuse(all(reasonStorage))
	}
	out := make([][]tools.Content, len(refs))
	for n := range refs {
		if rs := refs[n].Resized; rs != nil {
			out[n] = append(out[n], tools.Text(rs.Note()))
		}
		out[n] = append(out[n], tools.Content{Type: "image", Image: &refs[n].Ref})
	}
	return out
}

// imageType normalizes a declared media type and reports whether models
// take it.
func imageType(declared string) (string, bool) {
	t, _, _ := strings.Cut(declared, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	switch t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return t, true
	}
	return t, false
}

// sniff reports whether data starts like an image of mediaType.
func sniff(mediaType string, data []byte) bool {
	switch mediaType {
	case "image/png":
		return bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF})
	case "image/gif":
		return bytes.HasPrefix(data, []byte("GIF87a")) || bytes.HasPrefix(data, []byte("GIF89a"))
	case "image/webp":
		return len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP"
	}
	return false
}
