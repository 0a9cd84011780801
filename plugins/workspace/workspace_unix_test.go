//go:build unix

package workspace_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFIFO: a FIFO would block an open until a writer comes; read and
// edit refuse it and search passes over it, at once.
func TestFIFO(t *testing.T) {
	w := start(t, "")
	w.file("a.txt", "needle\n")
	if err := syscall.Mkfifo(filepath.Join(w.dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.ap.answer = "session"
	for _, c := range [][2]string{{"read", `{"path":"fifo"}`}, {"edit", `{"path":"fifo","old_string":"a","new_string":"b"}`}} {
		if _, err := w.text(c[0], c[1]); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s of a FIFO: %v", c[0], err)
		}
	}
	if _, err := w.text("list", `{"path":"fifo"}`); err == nil {
		t.Error("list of a FIFO: no error")
	}
	if out, err := w.text("search", `{"pattern":"needle"}`); err != nil || out != "a.txt:1: needle\n" {
		t.Errorf("search beside a FIFO: %q, %v", out, err)
	}
}
