package chatui

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
)

// An unanswered line's error (a server's, a provider's) may span lines:
// the transcript still shows the user's line as one line.
func TestTranscriptUnansweredErrorOneLine(t *testing.T) {
	var b strings.Builder
	info := app.ChatInfo{Transcript: []app.ChatSaid{
		{Role: "user", Text: "hello", Unanswered: true, Error: "provider said:\n500\ninternal"},
	}}
	showTranscript(&b, info, 80)
	got := b.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, "> hello") || !strings.Contains(got, "[unanswered: provider said: 500") {
		t.Fatalf("transcript:\n%s", got)
	}
}
