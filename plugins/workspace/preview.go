package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/dsh-host/dsh-host/services/tools"
)

// previewEdit is the diff an edit would make, shown to the person asked
// to approve it; "" when the edit would fail (the call then says why).
func (w *Workspace) previewEdit(call tools.Call) string {
	var in editIn
	if json.Unmarshal(call.Args, &in) != nil {
		return ""
	}
	rel, err := w.rel(in.Path)
	if err != nil {
		return ""
	}
	data, _, err := w.readText(in.Path, rel)
	if err != nil {
		return ""
	}
	next, err := in.apply(string(data))
	if err != nil {
		return ""
	}
	return Diff(in.Path, string(data), next)
}

// previewWrite is the diff from the file's content, or says it is new.
func (w *Workspace) previewWrite(call tools.Call) string {
	var in writeIn
	if json.Unmarshal(call.Args, &in) != nil {
		return ""
	}
	rel, err := w.rel(in.Path)
	if err != nil {
		return ""
	}
	data, _, err := w.readText(in.Path, rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("a new file %s, %d bytes:\n%s", in.Path, len(in.Content), in.Content)
	case err != nil:
		// There, but not shown as text (binary, too large, not a
		// regular file): the person asked must not read it as new.
		return fmt.Sprintf("replaces %s (%v), with %d bytes:\n%s", in.Path, err, len(in.Content), in.Content)
	}
	return Diff(in.Path, string(data), in.Content)
}
