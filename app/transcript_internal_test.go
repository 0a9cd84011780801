package app

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
)

// TestTranscriptTailBounded: a long session's transcript reaches a front
// end as its last lines, each text cut whole characters short of the
// bound, so that a resume over the control socket stays small.
func TestTranscriptTailBounded(t *testing.T) {
	var said []sessions.Said
	for i := range maxTranscriptLines + 50 {
		said = append(said, sessions.Said{Role: "user", Text: strings.Repeat("é", i)})
	}
	said = append(said, sessions.Said{Role: "assistant", Text: strings.Repeat("日本", maxTranscriptText)})
	got := transcriptTail(said)
	if len(got) != maxTranscriptLines || got[0].Text != said[len(said)-maxTranscriptLines].Text {
		t.Fatalf("%d lines, first %q", len(got), got[0].Text)
	}
	last := got[len(got)-1].Text
	if len(last) > maxTranscriptText+len("…") || !utf8.ValidString(last) || !strings.HasSuffix(last, "…") {
		t.Errorf("the long text: %d bytes, valid %v", len(last), utf8.ValidString(last))
	}
}
