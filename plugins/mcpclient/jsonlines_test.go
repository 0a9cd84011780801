package mcpclient

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func TestJSONLinesFilter(t *testing.T) {
	long := strings.Repeat("y", 100<<10) // past one read buffer
	big := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + long + `"}}` + "\n"
	tests := []struct {
		name, in, want string
		skipped        []string
	}{
		{"only messages", "{\"a\":1}\n[1]\n", "{\"a\":1}\n[1]\n", nil},
		{"a banner first", "Memory server starting...\n{\"a\":1}\n", "{\"a\":1}\n", []string{"Memory server starting..."}},
		{"between messages, CRLF", "{\"a\":1}\r\nlog: hi\r\n{\"b\":2}\r\n", "{\"a\":1}\r\n{\"b\":2}\r\n", []string{"log: hi"}},
		{"blank lines pass", "\n  \n{\"a\":1}\n", "\n  \n{\"a\":1}\n", nil},
		{"indented message", "  \t{\"a\":1}\n", "  \t{\"a\":1}\n", nil},
		{"indented text", "   starting\n{}\n", "{}\n", []string{"   starting"}},
		{"a line past one buffer passes whole", big, big, nil},
		{"a long skipped line is logged cut", long + "\n{}\n", "{}\n", []string{strings.Repeat("y", maxStderrLine) + "…"}},
		{"unterminated last line", "{}\nbye", "{}\n", []string{"bye"}},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			rec := &logRecorder{}
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
			for _, r := range rec.find(slog.LevelWarn, "skipped a line") {
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
				io.CopyBuffer(struct{ io.Writer }{io.Discard}, &jsonLines{r: bytes.NewReader(in.data), logger: discardLogger()}, buf)
			}
		})
	}
}
