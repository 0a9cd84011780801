package attachments

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
)

// Blob is any content to store: audio, a PDF, an embedded resource's
// bytes. MediaType is what the sender declared (empty: sniffed from the
// bytes).
type Blob struct {
	MediaType string
	Data      []byte
	Name      string // optional, kept in the reference
}

// SaveBlob stores b under the sha256 of its bytes, durably, as SaveImages
// stores a batch of one: the file appears whole or not at all. The image
// limits do not apply, only MaxBatchBytes; bytes that carry an image
// signature must decode as that image (the store reads image headers back
// on Stat), else the blob is refused as KindInvalidImage.
//
// The returned Ref carries the declared media type. The store keeps only
// the bytes, so [Store.Stat] and [Store.Open] report the type the bytes
// show (an image's, or net/http's sniffing: "audio/wave",
// "application/pdf", "application/octet-stream" when unknown); keep the
// Ref if the declared type matters. Width and Height are 0 unless the bytes
// are an image.
func (s *Store) SaveBlob(ctx context.Context, b Blob) (Ref, error) {
	it, err := checkBlob(b, s.limits)
	if err != nil {
		return Ref{}, err
	}
	sum := sha256.Sum256(it.data)
	it.hex = hex.EncodeToString(sum[:])
	it.ref.ID = idPrefix + it.hex
	if err := ctx.Err(); err != nil {
		return Ref{}, fmt.Errorf("attachments: nothing saved: %w", err)
	}
	if err := s.persist(ctx, []checked{it}); err != nil {
		return Ref{}, err
	}
	return it.ref, nil
}

// checkBlob admits one blob and returns its ref without the id.
func checkBlob(b Blob, l Limits) (checked, error) {
	if n := int64(len(b.Data)); n > l.MaxBatchBytes {
		return checked{}, &Error{Kind: KindBlobTooLarge, Index: -1, MediaType: b.MediaType, Limit: l.MaxBatchBytes, Actual: n}
	}
	declared := b.MediaType
	if declared != "" {
		t, params, err := mime.ParseMediaType(declared)
		if err != nil {
			return checked{}, &Error{Kind: KindInvalidMediaType, Index: -1, MediaType: declared, Err: err}
		}
		declared = mime.FormatMediaType(t, params)
	}
	ref := Ref{MediaType: declared, Bytes: int64(len(b.Data)), Name: b.Name}
	if t := sniff(b.Data); t != "" {
		cfg, err := decodeConfig(t, bytes.NewReader(b.Data))
		if err != nil {
			return checked{}, &Error{Kind: KindInvalidImage, Index: -1, MediaType: t, Err: err}
		}
		ref.Width, ref.Height = cfg.Width, cfg.Height
	}
	if ref.MediaType == "" {
		ref.MediaType = detectBlobType(b.Data)
	}
	return checked{ref: ref, data: b.Data}, nil
}

// detectBlobType names the type of bytes that are not an image of the
// store's, from their first 512 bytes.
func detectBlobType(head []byte) string {
	if t := sniff(head); t != "" {
		return t
	}
	return http.DetectContentType(head)
}
