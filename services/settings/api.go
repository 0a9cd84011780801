// Package settings is the user's settings file ($DSH_HOME/settings.yaml),
// read and updated one section at a time.
package settings

// This file fixes the API other packages build against; the services issue
// writes the implementation.

import (
	"errors"

	"github.com/dsh-host/dsh-host/host"
)

// Key is the settings service.
var Key = host.NewKey[*Store]("settings")

// Store is the settings file. (Being written in the services issue.)
type Store struct{}

var errUnimplemented = errors.New("settings: unimplemented")

// Read decodes section into a T. ok is false when the file has no such
// section (v is then the zero T).
func Read[T any](st *Store, section string) (v T, ok bool, err error) {
	return v, false, errUnimplemented
}

// Update applies fn to the current value of section (re-read under the file
// lock) and writes the result atomically, keeping every other section and the
// file's comments. If fn returns an error nothing is written.
func Update[T any](st *Store, section string, fn func(v *T) error) error {
	return errUnimplemented
}

// Watch calls fn with the section's value whenever the file changes on disk
// and the section's content changed; err reports a file that no longer parses
// (the last good value is kept). With a non-nil scope the watch ends with it.
func Watch[T any](st *Store, s *host.Scope, section string, fn func(v T, err error)) (remove func()) {
	return func() {}
}
