package policy

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestRecordCutsErrorWhole: a long error is cut between characters, not
// inside one, so the line keeps the text readable.
func TestRecordCutsErrorWhole(t *testing.T) {
	long := "x" + strings.Repeat("é", maxErrorText)
	rec := record(tools.Finished{Name: "t", Result: tools.Result{Err: errors.New(long)}}, false)
	if !utf8.ValidString(rec.Error) || !strings.HasSuffix(rec.Error, "…") {
		t.Fatalf("error %q: want valid UTF-8 ending in …", rec.Error)
	}
	if n := utf8.RuneCountInString(rec.Error); n > maxErrorText {
		t.Errorf("error has %d characters, want at most %d", n, maxErrorText)
	}
}
