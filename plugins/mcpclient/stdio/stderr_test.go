package stdio

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/mcptest"
)

func TestLineLogger(t *testing.T) {
	logs := &mcptest.Logs{}
	l := &lineLogger{logger: slog.New(logs)}
	for _, chunk := range []string{"one\ntw", "o\r\n", "\n", strings.Repeat("x", maxStderrLine+5), "\nlast"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	l.flush()
	var got []string
	for _, r := range logs.Find(slog.LevelInfo, "server stderr") {
		got = append(got, strings.TrimPrefix(r.Attrs, "line="))
	}
	want := []string{"one", "two", strings.Repeat("x", maxStderrLine), "xxxxx", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %d %q..., want %d", len(got), got[:min(2, len(got))], len(want))
	}
}
