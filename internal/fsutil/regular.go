package fsutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrTooLarge is ReadRegular's error for a file longer than it may read.
var ErrTooLarge = errors.New("too large")

// NotRegularError is ReadRegular's error for what is not a regular file.
type NotRegularError struct{ Kind string }

func (e *NotRegularError) Error() string { return "is not a regular file (" + e.Kind + ")" }

// ReadRegular reads the regular file at path, at most max bytes (longer:
// ErrTooLarge). It opens without blocking, which opening a FIFO nobody
// writes to would do, and checks the mode of the file it opened, not of
// the path before: a file swapped for a FIFO or a device between a check
// and the open is refused all the same (*NotRegularError).
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Kind: FileKind(fi.Mode())}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrTooLarge, max)
	}
	return data, nil
}

// FileKind names what a file that is not a regular one is, for an error.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}
