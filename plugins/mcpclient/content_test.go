package mcpclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpoutput"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

var attachmentID = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// stored returns the bytes of the attachment text names.
func stored(t *testing.T, st *attachments.Store, text string) []byte {
	t.Helper()
	id := attachmentID.FindString(text)
	if id == "" {
		t.Fatalf("no attachment id in %q", text)
	}
	rc, _, err := st.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Nothing of a result is a placeholder: audio and binary resources are
// stored and described, text resources inline, links say how to read them.
func TestResultBlocksKept(t *testing.T) {
	wav := mcptest.WAV(12000)
	pdf := []byte("%PDF-1.7 not much of a document")
	result := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "intro"},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: wav},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://doc.txt", MIMEType: "text/plain", Text: "the text"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://doc.pdf", MIMEType: "application/pdf", Blob: pdf}},
			&mcp.ResourceLink{URI: "test://later", Name: "later", MIMEType: "text/markdown"},
		}}
	}
	e := mustStart(t, testConfig("kb"), resultServer(t, result), withStore)
	// The read tool the link names (the resources service's).
	if _, err := e.reg.Register(e.scope, tools.Definition{Name: resources.ReadToolName, Execute: func(context.Context, tools.Call) (tools.Output, error) {
		return tools.Output{}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	res := e.call(tools.Caller{}, "mcp__kb__r", "{}")
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("content = %+v, want one text block", res.Content)
	}
	lines := strings.Split(res.Content[0].Text, "\n")
	ids := attachmentID.FindAllString(res.Content[0].Text, -1)
	if len(ids) != 2 {
		t.Fatalf("want 2 attachment ids in %q", res.Content[0].Text)
	}
	want := []string{
		"intro",
		"[audio: audio/wav, 1.50 s, 12044 bytes; stored as attachment " + ids[0] + "]",
		"Resource test://doc.txt (text/plain):",
		"the text",
		"[embedded resource test://doc.pdf: application/pdf, 31 bytes; stored as attachment " + ids[1] + "]",
		`Resource link: later (test://later, text/markdown); read it with mcp_read {"uri":"test://later","server":"kb"}`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	if !bytes.Equal(stored(t, e.store, lines[1]), wav) || !bytes.Equal(stored(t, e.store, lines[4]), pdf) {
		t.Error("the stored bytes differ from the result's")
	}

	// Without a store the blocks are described, and say why not kept.
	e = mustStart(t, testConfig("nb"), resultServer(t, result))
	text := resultText(e.call(tools.Caller{}, "mcp__nb__r", "{}"))
	for _, w := range []string{
		"[audio: audio/wav, 1.50 s, 12044 bytes; not kept: " + "no attachment store is mounted",
		"[embedded resource test://doc.pdf: application/pdf, 31 bytes; not kept: " + "no attachment store is mounted",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("%q lacks %q", text, w)
		}
	}
}

// A cut result stores the whole text, and the marker's call reads the
// rest of it through the registered mcp_read_output.
func TestLongOutputStored(t *testing.T) {
	cfg := testConfig("lo")
	cfg.MaxResultBytes = 1000
	long := strings.Repeat("é-0123456789\n", 300) // 4200 bytes, two-byte characters
	e := mustStart(t, cfg, resultServer(t, func() *mcp.CallToolResult { return textResult("head", long) }), withStore, withReadOutput)
	res := e.call(tools.Caller{}, "mcp__lo__r", "{}")
	text := resultText(res)
	marker := regexp.MustCompile(`\[output truncated: (\d+) of 4205 bytes dropped \(maxResultBytes 1000\); the whole text \(4205 bytes\) is stored: read the rest with mcp_read_output (\{.*\})\]$`)
	m := marker.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no read-on marker in %q", text)
	}
	full := "head\n" + long
	got := text[:strings.LastIndex(text, "\n[output truncated")]
	if !strings.HasPrefix(full, got) {
		t.Fatalf("the kept text is not the start of the whole")
	}
	args := m[2]
	for range 100 {
		r := e.call(tools.Caller{}, outputs.ToolName, args)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		slice := r.Value.(mcpoutput.OutputSlice)
		got += slice.Text
		if slice.End == slice.Total {
			if !strings.HasSuffix(r.Content[0].Text, "; the end of the stored text]") {
				t.Errorf("last read: %q", r.Content[0].Text)
			}
			break
		}
		next := regexp.MustCompile(`read on with mcp_read_output (\{.*\})\]$`).FindStringSubmatch(r.Content[0].Text)
		if next == nil {
			t.Fatalf("no read-on call in %q", r.Content[0].Text)
		}
		args = strings.Replace(next[1], "}", `,"length":700}`, 1)
	}
	if got != full {
		t.Errorf("reading on gave %d bytes, want the %d of the whole text", len(got), len(full))
	}
}

// withSmallStore mounts a store that admits images of at most 16 pixels a
// side, so a 64×64 one is downscaled.
func withSmallStore(e *testEnv, o *options) {
	st, err := attachments.New(e.t.TempDir(), &attachments.Limits{MaxSide: 16})
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, o.store = st, st
}

// An image that comes as an embedded resource of a tool result, or in a
// prompt's messages, takes the same admit path as a tool's image block:
// downscaled to fit the store's limits, with a note, not refused or kept
// as an opaque blob.
func TestEmbeddedAndPromptImagesDownscaled(t *testing.T) {
	img := mcptest.PNG(t, 64)
	const note = "[image downscaled from 64×64 to 16×16 to fit the attachment limits (scale 1:4)]"
	result := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://shot.png", MIMEType: "image/png", Blob: img}},
		}}
	}
	e := mustStart(t, testConfig("em"), resultServer(t, result), withSmallStore)
	res := e.call(imageCaller, "mcp__em__r", "{}")
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.Content) != 2 || res.Content[1].Image == nil || res.Content[1].Image.Width != 16 {
		t.Fatalf("content = %+v, want a text and a 16×16 image", res.Content)
	}
	if want := fmt.Sprintf("Resource test://shot.png (image/png, %d bytes):\n%s", len(img), note); res.Content[0].Text != want {
		t.Errorf("text = %q, want %q", res.Content[0].Text, want)
	}
	// A caller that takes no images gets the bytes kept as a blob.
	if text := resultText(e.call(tools.Caller{}, "mcp__em__r", "{}")); !strings.HasPrefix(text, "[embedded resource test://shot.png: image/png, ") {
		t.Errorf("for a text-only caller: %q", text)
	}

	got := resources.Renderer{Store: e.store}.Messages(context.Background(), &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: img}},
	}})
	if !regexp.MustCompile(`^\[user\]\n` + regexp.QuoteMeta(note) + `\n\[image sha256:[0-9a-f]{64} image/png 16x16, \d+ bytes\]$`).MatchString(got) {
		t.Errorf("prompt image: %q", got)
	}
}

// A cut without the mcp-output offer names no tool to read the rest.
func TestCutWithoutTheOffer(t *testing.T) {
	cfg := testConfig("nooffer")
	cfg.MaxResultBytes = 100
	e := mustStart(t, cfg, resultServer(t, func() *mcp.CallToolResult { return textResult(strings.Repeat("x", 500)) }), withStore)
	text := resultText(e.call(tools.Caller{}, "mcp__nooffer__r", "{}"))
	if !strings.HasSuffix(text, "the rest is not kept: no mcp_read_output tool is offered to read it (the mcp-output plugin is not running)]") {
		t.Errorf("cut without the offer: %q", text)
	}
}
