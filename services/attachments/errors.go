package attachments

import (
	"errors"
	"fmt"
)

// Kind names one reason SaveImages refuses a batch. The values are the
// error codes of the original store, so logs and diagnostics read the same.
type Kind string

// The admission kinds, in the order SaveImages checks them.
const (
	// KindTooManyImages: the batch has more members than Limits.MaxImages.
	KindTooManyImages Kind = "TOO_MANY_IMAGES"
	// KindImagesTooLarge: the members' bytes add up to more than
	// Limits.MaxBatchBytes.
	KindImagesTooLarge Kind = "IMAGES_TOO_LARGE"
	// KindUnsupportedType: the declared media type is not PNG, JPEG, GIF or
	// WebP.
	KindUnsupportedType Kind = "UNSUPPORTED_IMAGE_TYPE"
	// KindInvalidBase64: the image data is not canonical standard base64
	// (DecodeBase64Strict).
	KindInvalidBase64 Kind = "INVALID_IMAGE_BASE64"
	// KindTypeMismatch: the bytes are an image of another supported type
	// than the declared one.
	KindTypeMismatch Kind = "IMAGE_TYPE_MISMATCH"
	// KindImageTooLarge: one member is larger than Limits.MaxImageBytes.
	KindImageTooLarge Kind = "IMAGE_TOO_LARGE"
	// KindInvalidImage: the bytes are empty, carry no known signature, or
	// their header does not decode.
	KindInvalidImage Kind = "INVALID_IMAGE"
	// KindTooManyPixels: width*height exceeds Limits.MaxPixels.
	KindTooManyPixels Kind = "IMAGE_TOO_MANY_PIXELS"
	// KindDimensionTooLarge: the width or the height exceeds Limits.MaxSide.
	KindDimensionTooLarge Kind = "IMAGE_DIMENSION_TOO_LARGE"
	// KindBlobTooLarge: a blob (SaveBlob) is larger than
	// Limits.MaxBatchBytes.
	KindBlobTooLarge Kind = "BLOB_TOO_LARGE"
	// KindInvalidMediaType: a blob's declared media type does not parse.
	KindInvalidMediaType Kind = "INVALID_MEDIA_TYPE"
)

// Error is a refusal of a batch's content: SaveImages persisted nothing.
// Match it with errors.As, or test for any refusal with IsAdmissionError.
type Error struct {
	Kind Kind
	// Index is the offending member's position in the batch, or -1 when the
	// refusal is about the batch as a whole.
	Index int
	// MediaType is the member's declared media type, if any.
	MediaType string
	// Limit and Actual are the bound and the measured value for the size,
	// count and dimension kinds (0 otherwise).
	Limit, Actual int64
	// Err is the underlying cause (a decoder's error), if any.
	Err error
}

func (e *Error) Error() string {
	var what string
	switch e.Kind {
	case KindTooManyImages:
		what = fmt.Sprintf("the batch has %d images, more than the limit of %d; send fewer at a time", e.Actual, e.Limit)
	case KindImagesTooLarge:
		what = fmt.Sprintf("the batch holds %d bytes of images, more than the limit of %d; send fewer or smaller images", e.Actual, e.Limit)
	case KindUnsupportedType:
		what = fmt.Sprintf("the declared media type %q is not PNG, JPEG, WebP, or GIF", e.MediaType)
	case KindInvalidBase64:
		what = "the image data is not canonical base64"
	case KindTypeMismatch:
		what = fmt.Sprintf("the bytes are not %s as declared", e.MediaType)
	case KindImageTooLarge:
		what = fmt.Sprintf("the image is %d bytes, more than the limit of %d; send a smaller image", e.Actual, e.Limit)
	case KindInvalidImage:
		what = fmt.Sprintf("the bytes are not a valid %s image", e.MediaType)
	case KindTooManyPixels:
		what = fmt.Sprintf("the image has %d pixels, more than the limit of %d; downscale it", e.Actual, e.Limit)
	case KindDimensionTooLarge:
		what = fmt.Sprintf("the image is %d px on its longest side, more than the limit of %d; downscale it", e.Actual, e.Limit)
	case KindBlobTooLarge:
		what = fmt.Sprintf("the content is %d bytes, more than the limit of %d", e.Actual, e.Limit)
	case KindInvalidMediaType:
		what = fmt.Sprintf("the declared media type %q does not parse", e.MediaType)
	default:
		what = "the image was refused"
	}
	if e.Index >= 0 {
		what = fmt.Sprintf("image %d: %s", e.Index, what)
	}
	if e.Err != nil {
		what += ": " + e.Err.Error()
	}
	return what
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Kind: k}) match any refusal of kind k.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind
}

// IsAdmissionError reports whether err is a refusal of the batch's content
// (too many, too large, wrong type, invalid image...), as opposed to a
// storage failure.
func IsAdmissionError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// ErrInvalidRef reports an attachment id that is not "sha256:" followed by
// 64 lowercase hex digits.
var ErrInvalidRef = errors.New("invalid attachment id")

// ErrNotFound reports a well-formed attachment id the store does not hold.
var ErrNotFound = errors.New("attachment not found")
