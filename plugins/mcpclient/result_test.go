package mcpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/result"
	"github.com/dsh-host/dsh-host/services/tools"
)

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
			v := res.Value.(result.CallResult)
			if len(v.MCPContent()) != len(tt.content) {
				t.Errorf("canonical value has %d blocks, want %d", len(v.MCPContent()), len(tt.content))
			}
		})
	}
}

func TestCanonicalValueKeepsEveryBlock(t *testing.T) {
	data := mcptest.PNG(t, 2)
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
			before := mcptest.CountFiles(t, e.store.Dir())
			res := e.call(imageCaller, "mcp__err__r", "{}")
			var te *tools.ToolError
			if !errors.As(res.Err, &te) || te.Err.Error() != tt.want {
				t.Fatalf("Err = %v, want a tool error %q", res.Err, tt.want)
			}
			if resultText(res) != "Error: "+tt.want || res.Value != nil {
				t.Errorf("result = %+v", res)
			}
			if n := mcptest.CountFiles(t, e.store.Dir()) - before; n != 0 {
				t.Errorf("an error result stored %d files", n)
			}
		})
	}
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
	if v := res.Value.(result.CallResult).MCPContent(); len(v) != 2 || !strings.Contains(string(v[0]), "0123456789abcdef") {
		t.Errorf("canonical value was cut: %s", v)
	}
}

// Post-execute hooks win over the image projection: a replaced value is
// rendered again, replaced content is kept, and a block is a refusal.
func TestPostExecuteHooksWin(t *testing.T) {
	good := mcptest.PNG(t, 2)
	replaced := result.NewCallResult([]json.RawMessage{json.RawMessage(`{"type":"text","text":"replaced"}`)}, nil)
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
