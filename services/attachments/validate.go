package attachments

import (
	"bytes"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"mime"

	"golang.org/x/image/webp"
)

// The supported media types, as they appear in refs.
const (
	PNG  = "image/png"
	JPEG = "image/jpeg"
	GIF  = "image/gif"
	WebP = "image/webp"
)

// canonicalType returns the supported media type declared, ignoring case and
// parameters ("image/PNG; foo=bar" is PNG), or "" if it is not supported.
func canonicalType(declared string) string {
	t, _, err := mime.ParseMediaType(declared)
	if err != nil {
		return ""
	}
	switch t {
	case PNG, JPEG, GIF, WebP:
		return t
	}
	return ""
}

// sniff returns the supported media type whose signature data starts with,
// or "".
func sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return PNG
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return JPEG
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return GIF
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return WebP
	}
	return ""
}

// decodeConfig reads the header of data with the decoder of mediaType only,
// so that a file can never be admitted as one type and decoded as another.
func decodeConfig(mediaType string, r io.Reader) (image.Config, error) {
	switch mediaType {
	case PNG:
		return png.DecodeConfig(r)
	case JPEG:
		return jpeg.DecodeConfig(r)
	case GIF:
		return gif.DecodeConfig(r)
	case WebP:
		return webp.DecodeConfig(r)
	}
	return image.Config{}, image.ErrFormat
}

// checked is one admitted member.
type checked struct {
	ref  Ref
	hex  string
	data []byte
}

// validate checks the whole batch, in the original's order: count, total
// bytes, every declared type, then each member. It touches no file.
func validate(batch []Image, l Limits) ([]checked, error) {
	if len(batch) > l.MaxImages {
		return nil, &Error{Kind: KindTooManyImages, Index: -1, Limit: int64(l.MaxImages), Actual: int64(len(batch))}
	}
	var total int64
	for _, im := range batch {
		total += int64(len(im.Data))
	}
	if total > l.MaxBatchBytes {
		return nil, &Error{Kind: KindImagesTooLarge, Index: -1, Limit: l.MaxBatchBytes, Actual: total}
	}
	types := make([]string, len(batch))
	for i, im := range batch {
		if types[i] = canonicalType(im.MediaType); types[i] == "" {
			return nil, &Error{Kind: KindUnsupportedType, Index: i, MediaType: im.MediaType}
		}
	}
	out := make([]checked, len(batch))
	for i, im := range batch {
		ref, err := validateImage(types[i], im.Data, l)
		if err != nil {
			err.Index = i
			return nil, err
		}
		ref.Name = im.Name
		out[i] = checked{ref: ref, data: im.Data}
	}
	return out, nil
}

// validateImage checks one member whose declared type t is supported, and
// returns its ref without the id.
func validateImage(t string, data []byte, l Limits) (Ref, *Error) {
	got := sniff(data)
	if got != "" && got != t {
		return Ref{}, &Error{Kind: KindTypeMismatch, MediaType: t, Err: errorString("they are " + got)}
	}
	if n := int64(len(data)); n > l.MaxImageBytes {
		return Ref{}, &Error{Kind: KindImageTooLarge, MediaType: t, Limit: l.MaxImageBytes, Actual: n}
	}
	if got == "" {
		return Ref{}, &Error{Kind: KindInvalidImage, MediaType: t, Err: errorString("no " + t + " signature")}
	}
	cfg, err := decodeConfig(t, bytes.NewReader(data))
	if err != nil {
		return Ref{}, &Error{Kind: KindInvalidImage, MediaType: t, Err: err}
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Ref{}, &Error{Kind: KindInvalidImage, MediaType: t, Err: errorString("empty dimensions")}
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > l.MaxPixels {
		return Ref{}, &Error{Kind: KindTooManyPixels, MediaType: t, Limit: l.MaxPixels, Actual: px}
	}
	if side := max(cfg.Width, cfg.Height); side > l.MaxSide {
		return Ref{}, &Error{Kind: KindDimensionTooLarge, MediaType: t, Limit: int64(l.MaxSide), Actual: int64(side)}
	}
	return Ref{MediaType: t, Bytes: int64(len(data)), Width: cfg.Width, Height: cfg.Height}, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }
