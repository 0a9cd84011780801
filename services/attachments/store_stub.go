package attachments

// Stubs: replaced by the implementation in the services issue.

import (
	"context"
	"errors"
	"io"
)

var errUnimplemented = errors.New("attachments: unimplemented")

// New returns the store rooted at dir (created if missing).
func New(dir string, limits *Limits) (*Store, error) { return nil, errUnimplemented }

// SaveImages validates every member, then persists all of them or none.
// References come back in input order. A refusal is an *Error.
func (s *Store) SaveImages(ctx context.Context, batch []Image) ([]Ref, error) {
	return nil, errUnimplemented
}

// Stat returns the reference stored under id ("sha256:<hex>").
func (s *Store) Stat(id string) (Ref, error) { return Ref{}, errUnimplemented }

// Open opens the image stored under id.
func (s *Store) Open(id string) (io.ReadCloser, Ref, error) { return nil, Ref{}, errUnimplemented }

// IsAdmissionError reports whether err is a refusal of the batch's content
// (too many, too large, wrong type, invalid image...), as opposed to a
// storage failure.
func IsAdmissionError(err error) bool { return false }
