package attachments

import "fmt"

// The default limits, those of the original store.
const (
	DefaultMaxImageBytes = 3.5 * 1024 * 1024
	DefaultMaxImages     = 20
	DefaultMaxBatchBytes = 100 * 1024 * 1024
	DefaultMaxPixels     = 40_000_000
	DefaultMaxSide       = 2000
)

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{
		MaxImageBytes: DefaultMaxImageBytes,
		MaxImages:     DefaultMaxImages,
		MaxBatchBytes: DefaultMaxBatchBytes,
		MaxPixels:     DefaultMaxPixels,
		MaxSide:       DefaultMaxSide,
	}
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxImageBytes == 0 {
		l.MaxImageBytes = d.MaxImageBytes
	}
	if l.MaxImages == 0 {
		l.MaxImages = d.MaxImages
	}
	if l.MaxBatchBytes == 0 {
		l.MaxBatchBytes = d.MaxBatchBytes
	}
	if l.MaxPixels == 0 {
		l.MaxPixels = d.MaxPixels
	}
	if l.MaxSide == 0 {
		l.MaxSide = d.MaxSide
	}
	return l
}

// Validate reports the first negative limit, naming its config key.
func (l Limits) Validate() error {
	switch {
	case l.MaxImageBytes < 0:
		return negative("maxImageBytes", l.MaxImageBytes)
	case l.MaxImages < 0:
		return negative("maxImages", int64(l.MaxImages))
	case l.MaxBatchBytes < 0:
		return negative("maxBatchBytes", l.MaxBatchBytes)
	case l.MaxPixels < 0:
		return negative("maxPixels", l.MaxPixels)
	case l.MaxSide < 0:
		return negative("maxSide", int64(l.MaxSide))
	}
	return nil
}

func negative(key string, v int64) error {
	return fmt.Errorf("%s: must not be negative (got %d; 0 means the default)", key, v)
}
