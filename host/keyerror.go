package host

import (
	"errors"
	"fmt"
)

// KeyError is a Validate error about one config key. The host reports it
// at that key's line in the composition, not at the entry's, the way it
// reports a key the config type does not have. Return one (or several,
// joined with errors.Join) from Definition.Validate:
//
//	if _, err := time.LoadLocation(c.Zone); err != nil {
//		return host.KeyErrorf("zone", "unknown time zone %q; use an IANA name such as Europe/Paris", c.Zone)
//	}
type KeyError struct {
	// Key is the key's path as `dsh-host plugins` lists it: "zone",
	// "retry.max", "args[1]". A key the entry does not set (its value
	// came from Defaults) is reported at the entry's line.
	Key string
	Err error
}

// KeyErrorf returns a *KeyError for key with a formatted message; %w
// wraps as in fmt.Errorf.
func KeyErrorf(key, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the error about the key.
func (e *KeyError) Unwrap() error { return e.Err }

// validateErrors turns what a plugin's Validate returned into errors that
// name the file and line: a *KeyError's key's line, the entry's for the
// rest. Each error of a plain errors.Join is placed on its own.
func validateErrors(e *Entry, err error) []error {
	parts := []error{err}
	if multi, ok := err.(interface{ Unwrap() []error }); ok && errors.Join(multi.Unwrap()...).Error() == err.Error() {
		parts = multi.Unwrap()
	}
	out := make([]error, 0, len(parts))
	for _, part := range parts {
		var ke *KeyError
		if !errors.As(part, &ke) {
			out = append(out, fmt.Errorf("%s: invalid config: %w", e.where(e.Line), part))
			continue
		}
		at := e.where(e.keyLine(ke.Key))
		if part == error(ke) {
			// ke's message starts with its key: "config key zone: ..."
			out = append(out, fmt.Errorf("%s: config key %w", at, ke))
		} else {
			out = append(out, fmt.Errorf("%s: invalid config: %w", at, part))
		}
	}
	return out
}
