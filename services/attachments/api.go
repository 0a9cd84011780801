// Package attachments is the durable, content-addressed image (and blob)
// store.
//
// [Store.SaveImages] validates a whole batch of images first (count, sizes,
// declared media type against the bytes' signature, header dimensions) and
// then writes all of them or none, each under the sha256 of its bytes, with
// a temporary file, fsync and rename. A batch journal makes "none" hold
// even if the process dies half-way: the next writer, or the next [New],
// removes what the unfinished batch wrote. The [Ref]s it returns name images by
// that hash ("sha256:<hex>"), so the same bytes always give the same ref and
// a ref stays valid across restarts: [Store.Stat] and [Store.Open] find it
// again in a new Store on the same directory.
//
// [Store.SaveBlob] stores any other content (audio, a document, an
// embedded resource's bytes) the same way, under the same kind of ref.
//
// [Store.FitImage] downscales an image over the limits so that it fits
// them (aspect kept, re-encoded); it is the caller's step before
// SaveImages, which itself admits only what fits, byte for byte. At most
// two downscales of a store run at once (each holds a decoded image).
// [Store.SaveFitted] does both, for every image that comes from outside.
//
// A refused batch is an [*Error] whose Kind says why; [IsAdmissionError]
// tells such refusals from storage failures.
package attachments

import "github.com/dsh-host/dsh-host/host"

// Key is the attachment store service.
var Key = host.NewKey[*Store]("attachments")

// Image is one member of a batch to save: the declared media type and the
// decoded bytes.
type Image struct {
	MediaType string
	Data      []byte
	Name      string // optional, kept in the reference
}

// Ref is a durable reference to a stored image or blob. It survives
// restarts.
type Ref struct {
	ID        string `json:"id"` // "sha256:<hex>"
	MediaType string `json:"mediaType"`
	Bytes     int64  `json:"bytes"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Name      string `json:"name,omitempty"`
}

// Limits bound what SaveImages admits. Zero fields take the defaults.
type Limits struct {
	MaxImageBytes int64 // per image (default 3.5 MiB)
	MaxImages     int   // per batch (default 20)
	MaxBatchBytes int64 // per batch (default 100 MiB)
	MaxPixels     int64 // width*height (default 40 Mpx)
	MaxSide       int   // width or height (default 2000)
}
