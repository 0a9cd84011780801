package mcpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

func pngBytes(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// resultServer serves one tool, "r", returning whatever result() says.
func resultServer(t *testing.T, result func() *mcp.CallToolResult) *fakeServer {
	srv := newFakeServer(t, nil)
	srv.addTool("r", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return result(), nil
	})
	return srv
}

var imageCaller = tools.Caller{Kind: "test", ImageInput: true}

func TestTextResults(t *testing.T) {
	tests := []struct {
		name    string
		content []mcp.Content
		want    string
	}{
		{"one text", []mcp.Content{&mcp.TextContent{Text: "hello"}}, "hello"},
		{"joined with newline", []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}, "a\nb"},
		{"empty", nil, "(r returned no model-visible content)"},
		{"only empty text", []mcp.Content{&mcp.TextContent{}}, "(r returned no model-visible content)"},
		// Without a store, audio is described only (Render, which never
		// stores, words it differently: see stored in TestProjectPlaceholders).
		{"stored audio", []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte{1}}},
			"[audio: audio/wav, 1 bytes; not kept: no attachment store is mounted]"},
		// No read tool is registered here: the link says nothing of reading.
		{"resource link", []mcp.Content{&mcp.ResourceLink{Name: "readme", URI: "file:///r.md"}}, "Resource link: readme (file:///r.md)"},
		{"embedded resource", []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x:y", Text: "t"}}},
			"Resource x:y (unknown type):\nt"},
		{"image without a route", []mcp.Content{&mcp.TextContent{Text: "see"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("x")}},
			"see\n[image unavailable: image/png; the image bytes do not match the declared media type; raw image data remains available to programmatic callers]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustStart(t, testConfig("res"), resultServer(t, func() *mcp.CallToolResult {
				return &mcp.CallToolResult{Content: tt.content}
			}))
			res := e.call(tools.Caller{}, "mcp__res__r", "{}")
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if diff := cmp.Diff([]tools.Content{tools.Text(tt.want)}, res.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			def, _ := e.reg.Get("mcp__res__r")
			if rendered := def.Render(res.Value); !strings.HasPrefix(tt.name, "image") && !strings.HasPrefix(tt.name, "stored") {
				if diff := cmp.Diff(res.Content, rendered); diff != "" {
					t.Errorf("Render of the canonical value differs from Execute's content (-execute +render):\n%s", diff)
				}
			}
			v := res.Value.(CallResult)
			if len(v.MCPContent()) != len(tt.content) {
				t.Errorf("canonical value has %d blocks, want %d", len(v.MCPContent()), len(tt.content))
			}
		})
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

func TestCanonicalValueKeepsEveryBlock(t *testing.T) {
	data := pngBytes(t, 2)
	e := mustStart(t, testConfig("can"), resultServer(t, func() *mcp.CallToolResult {
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "hi"}, &mcp.ImageContent{MIMEType: "image/png", Data: data}},
			StructuredContent: map[string]any{"n": 1},
		}
	}))
	res := e.call(tools.Caller{}, "mcp__can__r", "{}")
	b, err := json.Marshal(res.Value)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"` +
		base64.StdEncoding.EncodeToString(data) + `"}],"structuredContent":{"n":1}}`
	if string(b) != want {
		t.Errorf("canonical value\n got %s\nwant %s", b, want)
	}
}

func TestArgumentsAndWireName(t *testing.T) {
	srv := newFakeServer(t, nil)
	var got atomic.Value
	srv.addTool("a.b", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got.Store(req.Params.Name + " " + string(req.Params.Arguments))
		return textResult("ok"), nil
	})
	e := mustStart(t, testConfig("args"), srv)
	public := PublicToolName("args", "a.b")
	for _, tt := range []struct{ args, want string }{
		{`{"x":[1,2]}`, `a.b {"x":[1,2]}`},
		{`null`, `a.b {}`},
		{`"text"`, `a.b {}`},
		{`[1]`, `a.b {}`},
		{``, `a.b {}`},
	} {
		def, _ := e.reg.Get(public)
		if _, err := def.Execute(context.Background(), tools.Call{Name: public, Args: json.RawMessage(tt.args)}); err != nil {
			t.Fatal(err)
		}
		if g := got.Load(); g != tt.want {
			t.Errorf("args %q reached the server as %q, want %q", tt.args, g, tt.want)
		}
	}
}

func TestIsErrorIsAToolError(t *testing.T) {
	for _, tt := range []struct {
		name    string
		content []mcp.Content
		want    string
	}{
		{"text", []mcp.Content{&mcp.TextContent{Text: "boom"}}, "boom"},
		{"non-text", []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte("x")}},
			"[image unavailable: image/png; this result was not admitted to durable model context; raw image data remains available to programmatic callers]"},
		{"empty", nil, "(r returned no model-visible content)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := mustStart(t, testConfig("err"), resultServer(t, func() *mcp.CallToolResult {
				return &mcp.CallToolResult{Content: tt.content, IsError: true}
			}), withStore)
			before := countFiles(t, e.store.Dir())
			res := e.call(imageCaller, "mcp__err__r", "{}")
			var te *tools.ToolError
			if !errors.As(res.Err, &te) || te.Err.Error() != tt.want {
				t.Fatalf("Err = %v, want a tool error %q", res.Err, tt.want)
			}
			if resultText(res) != "Error: "+tt.want || res.Value != nil {
				t.Errorf("result = %+v", res)
			}
			if n := countFiles(t, e.store.Dir()) - before; n != 0 {
				t.Errorf("an error result stored %d files", n)
			}
		})
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func TestStructuredContentValidation(t *testing.T) {
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"answer": map[string]any{"$ref": "#/$defs/num"}},
		"required":   []any{"answer"},
		"$defs":      map[string]any{"num": map[string]any{"type": "integer", "minimum": 0}},
	}
	type box struct{ v any }
	var sc atomic.Value
	sc.Store(box{})
	srv := newFakeServer(t, nil)
	srv.srv.AddTool(&mcp.Tool{Name: "s", InputSchema: map[string]any{"type": "object"}, OutputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, StructuredContent: sc.Load().(box).v}, nil
		})
	srv.srv.AddTool(&mcp.Tool{Name: "u", InputSchema: map[string]any{"type": "object"},
		OutputSchema: map[string]any{"$ref": "https://example.invalid/remote.json"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, StructuredContent: map[string]any{"any": true}}, nil
		})
	e := mustStart(t, testConfig("sc"), srv)
	for _, tt := range []struct {
		name  string
		value any
		want  string // in the error; "" means valid
	}{
		{"valid", map[string]any{"answer": 42}, ""},
		{"wrong type through $ref", map[string]any{"answer": "42"}, "/properties/answer"},
		{"below minimum", map[string]any{"answer": -1}, "minimum"},
		{"missing", nil, "the result has no structuredContent"},
	} {
		sc.Store(box{tt.value})
		res := e.call(tools.Caller{}, "mcp__sc__s", "{}")
		if tt.want == "" {
			if res.Err != nil {
				t.Errorf("%s: Err = %v", tt.name, res.Err)
			}
			continue
		}
		if !errors.Is(res.Err, tools.ErrInvalidOutput) || !strings.Contains(res.Err.Error(), tt.want) ||
			!strings.Contains(res.Err.Error(), `mcp-client(sc): structuredContent does not match the tool's outputSchema`) {
			t.Errorf("%s: Err = %v, want ErrInvalidOutput saying %q", tt.name, res.Err, tt.want)
		}
	}
	// An outputSchema that does not resolve is not enforced.
	if res := e.call(tools.Caller{}, "mcp__sc__u", "{}"); res.Err != nil {
		t.Errorf("unsupported schema: %v", res.Err)
	}
}

func TestCancellationReachesTheServer(t *testing.T) {
	srv := newFakeServer(t, nil)
	started := make(chan struct{})
	cancelled := make(chan struct{})
	srv.addTool("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	e := mustStart(t, testConfig("can"), srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result)
	go func() { done <- e.reg.Execute(ctx, tools.Caller{}, "mcp__can__slow", nil) }()
	<-started
	cancel()
	res := <-done
	if !errors.Is(res.Err, context.Canceled) {
		t.Errorf("Err = %v, want context.Canceled", res.Err)
	}
	select {
	case <-cancelled:
	case <-time.After(waitTimeout):
		t.Fatal("the server never saw notifications/cancelled")
	}
}

func TestToolCallTimeout(t *testing.T) {
	srv := newFakeServer(t, nil)
	cancelled := make(chan struct{})
	srv.addTool("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	cfg := testConfig("to")
	cfg.ToolCallTimeoutMs = 20
	e := mustStart(t, cfg, srv)
	res := e.call(tools.Caller{}, "mcp__to__slow", "{}")
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "did not answer within toolCallTimeoutMs (20ms)") {
		t.Errorf("Err = %v", res.Err)
	}
	<-cancelled
}

func TestMaxResultBytes(t *testing.T) {
	cfg := testConfig("big")
	cfg.MaxResultBytes = 10
	e := mustStart(t, cfg, resultServer(t, func() *mcp.CallToolResult { return textResult("0123456789abcdef", "ghij") }))
	res := e.call(tools.Caller{}, "mcp__big__r", "{}")
	want := "0123456789\n[output truncated: 11 of 21 bytes dropped (maxResultBytes 10); the rest is not kept: no attachment store is mounted]"
	if diff := cmp.Diff([]tools.Content{tools.Text(want)}, res.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	if v := res.Value.(CallResult).MCPContent(); len(v) != 2 || !strings.Contains(string(v[0]), "0123456789abcdef") {
		t.Errorf("canonical value was cut: %s", v)
	}
	// A multi-byte character is never split.
	c := &client{cfg: &Config{MaxResultBytes: 2}}
	if got := c.truncate([]tools.Content{tools.Text("é€")}, nil)[0].Text; !strings.HasPrefix(got, "é\n[output truncated: 3 of 5 bytes") {
		t.Errorf("truncate split a character: %q", got)
	}
}

func TestImages(t *testing.T) {
	good := pngBytes(t, 4)
	big := pngBytes(t, 64)
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
			var opts []envOption
			if tt.store {
				opts = append(opts, func(e *testEnv, o *options) {
					st, err := attachments.New(t.TempDir(), tt.limits)
					if err != nil {
						t.Fatal(err)
					}
					e.store, o.store = st, st
				})
			}
			e := mustStart(t, testConfig("img"), resultServer(t, tt.result), opts...)
			before := 0
			if tt.store {
				before = countFiles(t, e.store.Dir())
			}
			res := e.call(tt.caller, "mcp__img__r", "{}")
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			var got []string
			for _, c := range res.Content {
				switch c.Type {
				case "image":
					got = append(got, "IMG")
					rc, ref, err := e.store.Open(c.Image.ID)
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
			if tt.store && tt.want[len(tt.want)-1] != "after" && tt.want[len(tt.want)-1] != "IMG" && countFiles(t, e.store.Dir()) != before {
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
	c := newClient(options{cfg: testConfig("st"), store: st, logger: discardLogger()})
	imgs := []*mcp.ImageContent{{MIMEType: "image/png", Data: pngBytes(t, 2)}}
	want := [][]tools.Content{{tools.Text(imageDiagnostic("image/png", reasonStorage))}}
	if diff := cmp.Diff(want, c.admitImages(context.Background(), imageCaller, "r", imgs)); diff != "" {
		t.Errorf("storage failure (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	want = [][]tools.Content{{tools.Text(imageDiagnostic("image/png", reasonCanceled))}}
	if diff := cmp.Diff(want, c.admitImages(ctx, imageCaller, "r", imgs)); diff != "" {
		t.Errorf("canceled (-want +got):\n%s", diff)
	}
}

// Post-execute hooks win over the image projection: a replaced value is
// rendered again, replaced content is kept, and a block is a refusal.
func TestPostExecuteHooksWin(t *testing.T) {
	good := pngBytes(t, 2)
	replaced := NewCallResult([]json.RawMessage{json.RawMessage(`{"type":"text","text":"replaced"}`)}, nil)
	for _, tt := range []struct {
		name    string
		hook    func(*tools.Result) error
		want    []tools.Content
		refused bool
	}{
		{name: "value replaced", hook: func(r *tools.Result) error { r.Value = replaced; return nil },
			want: []tools.Content{tools.Text("replaced")}},
		{name: "content replaced", hook: func(r *tools.Result) error { r.Content = []tools.Content{tools.Text("mine")}; return nil },
			want: []tools.Content{tools.Text("mine")}},
		{name: "blocked", hook: func(*tools.Result) error { return errors.New("not today") }, refused: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := mustStart(t, testConfig("pe"), resultServer(t, func() *mcp.CallToolResult {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: good}}}
			}), withStore)
			remove := e.reg.OnPostExecute(e.scope, "mcp__pe__*", func(_ context.Context, _ tools.Call, res *tools.Result) error {
				return tt.hook(res)
			})
			defer remove()
			res := e.call(imageCaller, "mcp__pe__r", "{}")
			if tt.refused {
				if !errors.Is(res.Err, tools.ErrRefused) || res.Value != nil {
					t.Errorf("result = %+v, want a refusal", res)
				}
				for _, c := range res.Content {
					if c.Image != nil {
						t.Errorf("a blocked result carries an image: %+v", res.Content)
					}
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if diff := cmp.Diff(tt.want, res.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}
}

// go-sdk refuses a malformed base64 payload; the call becomes a clear tool
// error naming the server and the tool, and the connection keeps working.
func TestMalformedBase64IsAToolError(t *testing.T) {
	srv := resultServer(t, func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte("abc")}}}
	})
	var corrupt atomic.Bool
	srv.wrap = func(c mcp.Connection) mcp.Connection { return &corruptingConn{Connection: c, on: &corrupt} }
	e := mustStart(t, testConfig("b64"), srv)
	corrupt.Store(true)
	res := e.call(imageCaller, "mcp__b64__r", "{}")
	if res.Err == nil || !strings.Contains(res.Err.Error(), `mcp-client(b64): tool "r" failed`) {
		t.Fatalf("Err = %v", res.Err)
	}
	corrupt.Store(false)
	if res := e.call(imageCaller, "mcp__b64__r", "{}"); res.Err != nil {
		t.Errorf("the next call failed: %v", res.Err)
	}
}

// corruptingConn breaks the base64 of image data in responses it reads.
type corruptingConn struct {
	mcp.Connection
	on *atomic.Bool
}

func (c *corruptingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && c.on.Load() && bytes.Contains(resp.Result, []byte(`"data":"YWJj"`)) {
		resp.Result = bytes.ReplaceAll(resp.Result, []byte(`"data":"YWJj"`), []byte(`"data":"!!not base64!!"`))
	}
	return msg, err
}
