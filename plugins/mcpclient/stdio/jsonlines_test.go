package stdio

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

func TestJSONLinesFilter(t *testing.T) {
	long := strings.Repeat("y", 100<<10) // past the look-ahead
	m1 := `{"jsonrpc":"2.0","id":1,"result":{}}`
	m2 := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`
	big := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + long + `"}}` + "\n"
	bigByID := `{ "id":1,"jsonrpc":"2.0","result":{"text":"` + long + `"}}` + "\n"
	bigLog := `{"level":30,"msg":"` + long + `"}`
	tests := []struct {
		name, in, want string
		skipped        []string
	}{
		{"only messages", m1 + "\n[" + m1 + "," + m2 + "]\n" + m2 + "\n", m1 + "\n[" + m1 + "," + m2 + "]\n" + m2 + "\n", nil},
		{"a banner first", "Memory server starting...\n" + m1 + "\n", m1 + "\n", []string{"Memory server starting..."}},
		{"between messages, CRLF", m1 + "\r\nlog: hi\r\n" + m2 + "\r\n", m1 + "\r\n" + m2 + "\r\n", []string{"log: hi"}},
		{"a log line in brackets", "[INFO] server starting\n" + m1 + "\n", m1 + "\n", []string{"[INFO] server starting"}},
		{"a JSON log line", `{"level":30,"msg":"ready"}` + "\n" + m1 + "\n", m1 + "\n", []string{`{"level":30,"msg":"ready"}`}},
		{"JSON that is no message", "{}\n[1]\n[]\n" + `[{"jsonrpc":"2.0","id":1},{"level":30}]` + "\n" + m1 + "\n", m1 + "\n",
			[]string{"{}", "[1]", "[]", `[{"jsonrpc":"2.0","id":1},{"level":30}]`}},
		{"jsonrpc not first", `{"id":1,"jsonrpc":"2.0","result":{}}` + "\n", `{"id":1,"jsonrpc":"2.0","result":{}}` + "\n", nil},
		{"an id but no jsonrpc", `{"id":1,"level":30}` + "\n" + m1 + "\n", m1 + "\n", []string{`{"id":1,"level":30}`}},
		{"blank lines are dropped", "\n  \n" + m1 + "\n\r\n", m1 + "\n", nil},
		{"indented message", "  \t" + m1 + "\n", m1 + "\n", nil},
		{"indented text", "   starting\n" + m1 + "\n", m1 + "\n", []string{"starting"}},
		{"a line past the look-ahead passes whole", big, big, nil},
		{"past the look-ahead, id first", bigByID, bigByID, nil},
		{"a JSON log line past the look-ahead is skipped", bigLog + "\n" + m1 + "\n", m1 + "\n", []string{bigLog[:maxStderrLine] + "…"}},
		{"a long skipped line is logged cut", long + "\n" + m1 + "\n", m1 + "\n", []string{strings.Repeat("y", maxStderrLine) + "…"}},
		{"unterminated last line", m1 + "\nbye", m1 + "\n", []string{"bye"}},
		{"unterminated last message", "hi\n" + m1, m1, []string{"hi"}},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			rec := &mcptest.Logs{}
			var r io.Reader = strings.NewReader(tt.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := io.ReadAll(&jsonLines{r: r, logger: slog.New(rec)})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(tt.want)) {
				t.Errorf("%s (one byte %v): passed %q, want %q", tt.name, oneByte, trim(string(got)), trim(tt.want))
			}
			var skipped []string
			for _, r := range rec.Find(slog.LevelWarn, "skipped a line") {
				skipped = append(skipped, strings.TrimPrefix(r.Attrs, "line="))
			}
			if diff := cmp.Diff(tt.skipped, skipped); diff != "" {
				t.Errorf("%s (one byte %v): skipped (-want +got):\n%s", tt.name, oneByte, trim(diff))
			}
		}
	}
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// BenchmarkJSONLines compares reading a stdio server's stdout through the
// line filter with reading it directly: 1 KiB messages, and one 1 MiB one.
func BenchmarkJSONLines(b *testing.B) {
	small := bytes.Repeat([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`+strings.Repeat("z", 960)+`"}]}}`+"\n"), 1024)
	big := []byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("z", 1<<20) + `"}}` + "\n")
	for _, in := range []struct {
		name string
		data []byte
	}{{"1KiB-messages", small}, {"1MiB-message", big}} {
		b.Run(in.name+"/direct", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			buf := make([]byte, 32<<10)
			for b.Loop() {
				// Through a buffer, as go-sdk's decoder reads.
				io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{bytes.NewReader(in.data)}, buf)
			}
		})
		b.Run(in.name+"/filtered", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			buf := make([]byte, 32<<10)
			for b.Loop() {
				io.CopyBuffer(struct{ io.Writer }{io.Discard}, &jsonLines{r: bytes.NewReader(in.data), logger: slog.New(slog.DiscardHandler)}, buf)
			}
		})
	}
}
