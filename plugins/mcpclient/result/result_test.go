package result

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

var imageCaller = tools.Caller{Kind: "test", ImageInput: true}

func TestRender(t *testing.T) {
	p := &Projector{MaxBytes: 1 << 20}
	render := p.Render("r")
	text := NewCallResult([]json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)}, nil)
	for _, tt := range []struct {
		name  string
		value any
		want  string
	}{
		{"value", text, "hi"},
		{"pointer", &text, "hi"},
		{"nil pointer", (*CallResult)(nil), "null"},
		{"a value a hook made", map[string]any{"n": 1}, `{"n":1}`},
		{"unmarshalable", func() {}, "[unrenderable value: json: unsupported type: func()]"},
	} {
		if diff := cmp.Diff([]tools.Content{tools.Text(tt.want)}, render(tt.value)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, tt := range []struct {
		mediaType string
		data      string
		want      bool
	}{
		{"image/png", "\x89PNG\r\n\x1a\nrest", true},
		{"image/png", "GIF89a", false},
		{"image/jpeg", "\xff\xd8\xff\xe0", true},
		{"image/jpeg", "\xff\xd8", false},
		{"image/gif", "GIF87a...", true},
		{"image/gif", "GIF89a...", true},
		{"image/gif", "GIF90a", false},
		{"image/webp", "RIFF\x00\x00\x00\x00WEBPVP8 ", true},
		{"image/webp", "RIFF\x00\x00\x00\x00WAVE", false},
		{"image/bmp", "BM", false},
	} {
		if got := sniff(tt.mediaType, []byte(tt.data)); got != tt.want {
			t.Errorf("sniff(%s, %q) = %v, want %v", tt.mediaType, tt.data, got, tt.want)
		}
	}
	for declared, want := range map[string]string{"image/PNG": "image/png", "image/jpeg; q=1": "image/jpeg", " image/webp ": "image/webp"} {
		if got, ok := imageType(declared); !ok || got != want {
			t.Errorf("imageType(%q) = %q, %v", declared, got, ok)
		}
	}
}

func TestWAVDuration(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want float64
		ok   bool
	}{
		{"clip", mcptest.WAV(4000), 0.5, true},
		{"cut short", mcptest.WAV(4000)[:1000], float64(1000-44) / 8000, true},
		{"not wav", []byte("ID3\x03mp3 data"), 0, false},
		{"no fmt", []byte("RIFF\x00\x00\x00\x00WAVEdata\x04\x00\x00\x00abcd"), 0, false},
		{"chunk past the end", []byte("RIFF\x00\x00\x00\x00WAVEjunk\xff\xff\xff\xff"), 0, false},
	} {
		got, ok := wavDuration(tc.data)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// The projection also covers blocks go-sdk would not decode (a render of a
// value a hook built, or a future block type).
func TestProjectPlaceholders(t *testing.T) {
	tests := []struct {
		block string
		want  string
	}{
		{`"just a string"`, "[unsupported MCP content block: expected an object]"},
		{`42`, "[unsupported MCP content block: expected an object]"},
		{`{"type":"video"}`, "[unsupported MCP content type: video]"},
		{`{"text":"no type"}`, "[unsupported MCP content type: (missing)]"},
		{`{"type":"image","data":"AAAA"}`, "[image unavailable: unknown media type; this result was not admitted to durable model context; raw image data remains available to programmatic callers]"},
		{`{"type":"audio","data":"AAAA"}`, "[audio: unknown media type, 3 bytes; not stored in this rendering; the raw audio remains available to programmatic callers]"},
		{`{"type":"resource","resource":{"uri":"x:/b","mimeType":"application/pdf","blob":"AAAA"}}`, "[embedded resource x:/b: application/pdf, 3 bytes; not stored in this rendering; the raw data remains available to programmatic callers]"},
		{`{"type":"resource","resource":{"uri":"x:/t","mimeType":"text/plain","text":"hello"}}`, "Resource x:/t (text/plain):\nhello"},
		{`{"type":"resource","resource":{"uri":"x:/j","mimeType":"application/json","blob":"eyJhIjoxfQ=="}}`, "Resource x:/j (application/json):\n{\"a\":1}"},
		{`{"type":"resource"}`, "[embedded resource unavailable: the MCP block has no resource contents]"},
		{`{"type":"resource_link","uri":"x:/l","name":"l","title":"The L","mimeType":"text/plain"}`, `Resource link: l — The L (x:/l, text/plain); read it with mcp_read {"uri":"x:/l","server":"srv"}`},
		{`{"type":"resource_link","uri":"x:y"}`, "[resource link unavailable: the MCP block is missing its name or URI]"},
		{`{"type":"text"}`, "(t returned no model-visible content)"},
	}
	for _, tt := range tests {
		got := project("t", "srv", rawViews([]json.RawMessage{json.RawMessage(tt.block)}), nil)
		if diff := cmp.Diff([]tools.Content{tools.Text(tt.want)}, got); diff != "" {
			t.Errorf("project(%s) (-want +got):\n%s", tt.block, diff)
		}
	}
}

// A multi-byte character is never split.
func TestTruncateKeepsCharactersWhole(t *testing.T) {
	p := &Projector{MaxBytes: 2}
	if got := p.truncate([]tools.Content{tools.Text("é€")}, nil)[0].Text; !strings.HasPrefix(got, "é\n[output truncated: 3 of 5 bytes") {
		t.Errorf("truncate split a character: %q", got)
	}
}

func TestImages(t *testing.T) {
	good := mcptest.PNG(t, 4)
	big := mcptest.PNG(t, 64)
	mixed := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "before"},
			&mcp.ImageContent{MIMEType: "image/png", Data: good},
			&mcp.TextContent{Text: "between"},
			&mcp.TextContent{Text: "more"},
			&mcp.ImageContent{MIMEType: "image/png", Data: good},
			&mcp.TextContent{Text: "after"},
		}}
	}
	diag := func(mime, reason string) string { return imageDiagnostic(mime, reason) }
	tests := []struct {
		name   string
		result func() *mcp.CallToolResult
		store  bool
		limits *attachments.Limits
		caller tools.Caller
		width  int      // of the stored images, when not the original's 4
		want   []string // text blocks; "IMG" marks an image reference
	}{
		{name: "admitted in order", result: mixed, store: true, caller: imageCaller,
			want: []string{"before", "IMG", "between\nmore", "IMG", "after"}},
		{name: "no store", result: mixed, caller: imageCaller,
			want: []string{"before\n" + diag("image/png", reasonNoStore) + "\nbetween\nmore\n" + diag("image/png", reasonNoStore) + "\nafter"}},
		{name: "caller without image input", result: mixed, store: true, caller: tools.Caller{},
			want: []string{"before\n" + diag("image/png", reasonNoInput) + "\nbetween\nmore\n" + diag("image/png", reasonNoInput) + "\nafter"}},
		{name: "malformed batch is atomic", store: true, caller: imageCaller,
			result: func() *mcp.CallToolResult {
				return &mcp.CallToolResult{Content: []mcp.Content{
					&mcp.ImageContent{MIMEType: "image/png", Data: good},
					&mcp.ImageContent{MIMEType: "image/bmp", Data: good},
					&mcp.ImageContent{MIMEType: "image/jpeg", Data: good},
					&mcp.ImageContent{Data: good},
					&mcp.ImageContent{MIMEType: "image/png"},
				}}
			},
			want: []string{strings.Join([]string{
				diag("image/png", reasonSibling), diag("image/bmp", reasonBadType), diag("image/jpeg", reasonMismatch),
				diag("unknown media type", reasonBadType), diag("image/png", reasonEmpty)}, "\n")}},
		{name: "downscaled to fit", store: true, caller: imageCaller, limits: &attachments.Limits{MaxSide: 16},
			result: func() *mcp.CallToolResult {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: big}}}
			},
			width: 16,
			want:  []string{"[image downscaled from 64×64 to 16×16 to fit the attachment limits (scale 1:4)]", "IMG"}},
		// Even a 1×1 image is over 50 bytes: nothing fits, and the store
		// refuses what FitImage could make.
		{name: "admission rejected", store: true, caller: imageCaller, limits: &attachments.Limits{MaxImageBytes: 50},
			result: func() *mcp.CallToolResult {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: big}}}
			},
			want: []string{"ADMISSION"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Projector{Label: "mcp-client(img)", Log: slog.New(slog.DiscardHandler), MaxBytes: 1 << 20}
			if tt.store {
				st, err := attachments.New(t.TempDir(), tt.limits)
				if err != nil {
					t.Fatal(err)
				}
				p.Store = st
			}
			before := 0
			if tt.store {
				before = mcptest.CountFiles(t, p.Store.Dir())
			}
			var got []string
			for _, c := range p.Model(t.Context(), tt.caller, "r", tt.result().Content) {
				switch c.Type {
				case "image":
					got = append(got, "IMG")
					rc, ref, err := p.Store.Open(c.Image.ID)
					if err != nil {
						t.Fatalf("open %s: %v", c.Image.ID, err)
					}
					b, _ := io.ReadAll(rc)
					rc.Close()
					if tt.width != 0 {
						if ref.Width != tt.width || ref.MediaType != "image/png" || int(ref.Bytes) != len(b) {
							t.Errorf("stored image is not the downscaled one: %+v", ref)
						}
					} else if !bytes.Equal(b, good) || ref.MediaType != "image/png" || ref.Width != 4 {
						t.Errorf("stored image differs: %+v", ref)
					}
				default:
					if strings.HasPrefix(c.Text, "[image unavailable: image/png; "+reasonAdmissionAt) {
						got = append(got, "ADMISSION")
					} else {
						got = append(got, c.Text)
					}
				}
				if strings.Contains(c.Text, base64.StdEncoding.EncodeToString(good)[:16]) {
					t.Error("base64 reached model content")
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if tt.store && tt.want[len(tt.want)-1] != "after" && tt.want[len(tt.want)-1] != "IMG" && mcptest.CountFiles(t, p.Store.Dir()) != before {
				t.Error("a refused batch left files in the store")
			}
		})
	}
}

func TestImageStorageFailureAndCancel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "att")
	st, err := attachments.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the store's directory with a file: writes fail below
	// admission.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Projector{Label: "mcp-client(st)", Log: slog.New(slog.DiscardHandler), Store: st}
	imgs := []*mcp.ImageContent{{MIMEType: "image/png", Data: mcptest.PNG(t, 2)}}
	want := [][]tools.Content{{tools.Text(imageDiagnostic("image/png", reasonStorage))}}
	if diff := cmp.Diff(want, p.admitImages(context.Background(), imageCaller, "r", imgs)); diff != "" {
		t.Errorf("storage failure (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	want = [][]tools.Content{{tools.Text(imageDiagnostic("image/png", reasonCanceled))}}
	if diff := cmp.Diff(want, p.admitImages(ctx, imageCaller, "r", imgs)); diff != "" {
		t.Errorf("canceled (-want +got):\n%s", diff)
	}
}

// The schema shape most servers advertise (go-sdk infers it from a Go
// struct) gets the fast check, which accepts a valid value without
// jsonschema-go; Validate words every refusal.
func TestCommonSchemaGetsTheFastCheck(t *testing.T) {
	schema := &jsonschema.Schema{
		Type:                 "object",
		Properties:           map[string]*jsonschema.Schema{"sum": {Type: "number", Description: "a plus b"}},
		Required:             []string{"sum"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	rs, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewOutputSchema(rs)
	if s.fast == nil {
		t.Fatal("the common schema shape does not get the fast check")
	}
	if err := s.Validate(map[string]any{"sum": 5.0}); err != nil {
		t.Errorf("valid: %v", err)
	}
	if err := s.Validate(map[string]any{"sum": "5"}); err == nil || !strings.Contains(err.Error(), `has type "string", want "number"`) {
		t.Errorf("wrong type: %v", err)
	}
	if err := s.Validate(nil); err == nil || err.Error() != "the result has no structuredContent" {
		t.Errorf("missing: %v", err)
	}
}
