package resources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) { leaks.VerifyTestMain(m) }

func scope(t *testing.T, id string) *host.Scope {
	s := host.NewScope(context.Background(), id, nil)
	t.Cleanup(func() { _ = s.Dispose(time.Second) })
	return s
}

// fake is a provider whose reads answer with the URI and the server, and
// which records what it was asked.
type fake struct {
	server string
	mu     sync.Mutex
	calls  []string
}

func (f *fake) provider() Provider {
	return Provider{
		Server: f.server,
		Read: func(_ context.Context, uri string, _ *tools.Channels) (*mcp.ReadResourceResult, error) {
			f.record("read " + uri)
			if strings.HasSuffix(uri, "/missing") {
				return nil, errors.New("resource not found")
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: f.server + " says " + uri}}}, nil
		},
		Subscribe:   func(_ context.Context, uri string) error { f.record("subscribe " + uri); return nil },
		Unsubscribe: func(_ context.Context, uri string) error { f.record("unsubscribe " + uri); return nil },
		Complete: func(_ context.Context, req CompleteRequest) ([]string, error) {
			f.record("complete " + req.Ref.URI + " " + req.Argument + "=" + req.Value)
			return []string{req.Value + "1", req.Value + "2"}, nil
		},
	}
}

func (f *fake) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fake) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func register(t *testing.T, r *Registry, f *fake, res []*mcp.Resource, tmpl []*mcp.ResourceTemplate) (*Source, *host.Scope) {
	t.Helper()
	s := scope(t, f.server)
	src, err := r.Register(s, f.provider())
	if err != nil {
		t.Fatal(err)
	}
	src.Set(res, tmpl)
	return src, s
}

func uris(list []Resource) []string {
	var out []string
	for _, x := range list {
		out = append(out, x.Server+" "+x.URI)
	}
	return out
}

func TestListFilterAndRouting(t *testing.T) {
	logs := &mcptest.SyncBuffer{}
	r := New(&Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	a, b := &fake{server: "a"}, &fake{server: "b"}
	register(t, r, a, []*mcp.Resource{
		{URI: "file:///notes/todo.md", Name: "todo", MIMEType: "text/markdown", Description: "What to do next"},
		{URI: "shared://x", Name: "x"},
	}, []*mcp.ResourceTemplate{{URITemplate: "db://rows/{id}", Name: "row"}})
	register(t, r, b, []*mcp.Resource{{URI: "shared://x", Name: "x from b"}, {URI: "mem://b", Name: "b", Title: "Memory dump"}}, nil)

	if diff := cmp.Diff([]string{"a file:///notes/todo.md", "a shared://x", "b shared://x", "b mem://b"}, uris(r.List(Filter{}))); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b shared://x", "b mem://b"}, uris(r.List(Filter{Server: "b"}))); diff != "" {
		t.Errorf("List server b (-want +got):\n%s", diff)
	}
	// Every word, any field, any case.
	if diff := cmp.Diff([]string{"a file:///notes/todo.md"}, uris(r.List(Filter{Query: "NEXT markdown"}))); diff != "" {
		t.Errorf("List query (-want +got):\n%s", diff)
	}
	if got := r.List(Filter{Query: "next dump"}); len(got) != 0 {
		t.Errorf("a query whose words match different entries matched %v", uris(got))
	}
	if got := r.Templates(Filter{Query: "rows"}); len(got) != 1 || got[0].Server != "a" {
		t.Errorf("Templates query = %+v", got)
	}

	ctx := context.Background()
	for uri, want := range map[string]string{
		"shared://x":  "a", // listed by both: the first registered
		"mem://b":     "b",
		"db://rows/7": "a", // a's template matches
	} {
		res, err := r.Read(ctx, uri, nil)
		if err != nil || res.Server != want || res.Contents[0].Text != want+" says "+uri {
			t.Errorf("Read(%s) = %+v, %v; want it from %s", uri, res, err, want)
		}
	}
	if _, err := r.Read(ctx, "other://y", nil); !errors.Is(err, ErrNoOwner) || !strings.Contains(err.Error(), "servers: a, b") {
		t.Errorf("Read of a URI nobody offers = %v", err)
	}
	// An explicit server reads what it does not list (a resource link).
	if res, err := r.ReadFrom(ctx, "b", "other://y", nil); err != nil || res.Server != "b" {
		t.Errorf("ReadFrom(b) = %+v, %v", res, err)
	}
	if _, err := r.ReadFrom(ctx, "c", "other://y", nil); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("ReadFrom(c) = %v, want ErrUnknownServer", err)
	}
	if n := strings.Count(logs.String(), "several servers list the same URI"); n != 1 {
		t.Errorf("the collision was logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "reads=a shadowed=b") {
		t.Errorf("the collision log does not say which server wins:\n%s", logs)
	}
	// A re-sync that lists the same again logs nothing more.
	register(t, r, &fake{server: "c"}, nil, nil)
	if n := strings.Count(logs.String(), "several servers list the same URI"); n != 1 {
		t.Errorf("collision logged %d times after another registration", n)
	}
}

func TestOnlyServerTakesUnlistedURIs(t *testing.T) {
	r := New(nil)
	a := &fake{server: "a"}
	register(t, r, a, nil, nil)
	if res, err := r.Read(context.Background(), "anything://at/all", nil); err != nil || res.Server != "a" {
		t.Errorf("Read with one server = %+v, %v", res, err)
	}
	if _, err := New(nil).Read(context.Background(), "x://y", nil); !errors.Is(err, ErrNoOwner) || !strings.Contains(err.Error(), "no MCP server offering resources is connected") {
		t.Errorf("Read with no server = %v", err)
	}
}

func TestRegisterTwiceAndDispose(t *testing.T) {
	r := New(nil)
	var changes []Change
	var mu sync.Mutex
	r.OnChange(scope(t, "gateway"), func(c Change) {
		mu.Lock()
		changes = append(changes, c)
		mu.Unlock()
	})
	a := &fake{server: "a"}
	src, s := register(t, r, a, []*mcp.Resource{{URI: "x://1", Name: "1"}}, nil)
	if _, err := r.Register(scope(t, "other"), a.provider()); err == nil || !strings.Contains(err.Error(), `"a" is already registered`) {
		t.Errorf("second registration of a = %v", err)
	}
	src.Set([]*mcp.Resource{{URI: "x://1", Name: "1"}}, nil) // unchanged: no change
	src.Set([]*mcp.Resource{{URI: "x://1", Name: "one"}}, nil)
	if err := s.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	if r.Has("a") || len(r.List(Filter{})) != 0 {
		t.Errorf("a disposed provider is still there: %v", r.Servers())
	}
	src.Set([]*mcp.Resource{{URI: "x://2", Name: "2"}}, nil) // late: ignored
	if len(r.List(Filter{})) != 0 {
		t.Error("a Set after dispose brought resources back")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []Change{{Kind: ListChanged, Server: "a"}, {Kind: ListChanged, Server: "a"}, {Kind: ListChanged, Server: "a"}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

func TestExpand(t *testing.T) {
	r := New(nil)
	register(t, r, &fake{server: "a"}, nil, []*mcp.ResourceTemplate{
		{URITemplate: "db://rows/{id}", Name: "row"},
		{URITemplate: "search://q{?term,page}", Name: "search"},
	})
	tests := []struct {
		tmpl    string
		args    map[string]string
		want    string
		wantErr string
	}{
		{"db://rows/{id}", map[string]string{"id": "7"}, "db://rows/7", ""},
		{"db://rows/{id}", map[string]string{"id": "a b/c"}, "db://rows/a%20b%2Fc", ""},
		{"db://rows/{id}", nil, "", "missing id"},
		{"db://rows/{id}", map[string]string{"id": "1", "x": "2"}, "", "unknown x"},
		{"search://q{?term,page}", map[string]string{"term": "go"}, "search://q?term=go", ""},
		{"nope://{x}", nil, "", "no template"},
	}
	for _, tt := range tests {
		got, owner, err := r.Expand("", tt.tmpl, tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Expand(%s, %v) error = %v, want %q", tt.tmpl, tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || owner != "a" {
			t.Errorf("Expand(%s, %v) = %q, %q, %v; want %q from a", tt.tmpl, tt.args, got, owner, err, tt.want)
		}
	}
}

func TestSubscribe(t *testing.T) {
	r := New(nil)
	a := &fake{server: "a"}
	src, _ := register(t, r, a, []*mcp.Resource{{URI: "x://1", Name: "1"}}, nil)
	ctx := context.Background()
	got := make(chan string, 10)
	s1, s2 := scope(t, "one"), scope(t, "two")
	if _, err := r.Subscribe(ctx, s1, "x://1", func(uri string) { got <- "one " + uri }); err != nil {
		t.Fatal(err)
	}
	cancel2, err := r.Subscribe(ctx, s2, "x://1", func(uri string) { got <- "two " + uri })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"subscribe x://1"}, a.took()); diff != "" {
		t.Errorf("the server was asked (-want +got):\n%s", diff)
	}
	src.Updated("x://1")
	src.Updated("x://other") // nobody follows it
	if a, b := <-got, <-got; a != "one x://1" || b != "two x://1" || len(got) != 0 {
		t.Errorf("updates = %q, %q (+%d)", a, b, len(got))
	}
	cancel2()
	if calls := a.took(); len(calls) != 0 {
		t.Errorf("the server was asked %v while a subscriber is left", calls)
	}
	if err := s1.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"unsubscribe x://1"}, a.took()); diff != "" {
		t.Errorf("after the last subscriber left (-want +got):\n%s", diff)
	}
	noSub := &fake{server: "b"}
	p := noSub.provider()
	p.Subscribe = nil
	if _, err := r.Register(scope(t, "b"), p); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Subscribe(ctx, s2, "y://1", func(string) {}); err == nil {
		t.Error("a subscription to a URI no server owns succeeded")
	}
}

func TestComplete(t *testing.T) {
	r := New(nil)
	a := &fake{server: "a"}
	register(t, r, a, nil, []*mcp.ResourceTemplate{{URITemplate: "db://rows/{id}", Name: "row"}})
	got, err := r.completeRead(context.Background(), "db://rows/{id} id=4")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"id=41", "id=42"}, got); diff != "" {
		t.Errorf("completeRead (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"complete db://rows/{id} id=4"}, a.took()); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	if got, _ := r.completeRead(context.Background(), "db://rows/{id} i"); !cmp.Equal(got, []string{"id="}) {
		t.Errorf("completing a variable name = %q", got)
	}
	if got, _ := r.completeRead(context.Background(), "db:"); !cmp.Equal(got, []string{"db://rows/{id}"}) {
		t.Errorf("completing the template = %q", got)
	}
	// Servers listing the same URI or template (one server run over
	// several transports) offer it once: a completion is a word to type.
	for _, server := range []string{"b", "c"} {
		register(t, r, &fake{server: server}, []*mcp.Resource{{URI: "db://all", Name: "all"}}, []*mcp.ResourceTemplate{{URITemplate: "db://rows/{id}", Name: "row"}})
	}
	if got, _ := r.completeRead(context.Background(), "db:"); !cmp.Equal(got, []string{"db://all", "db://rows/{id}"}) {
		t.Errorf("completing a URI three servers list = %q", got)
	}
	if _, err := r.Complete(context.Background(), "zz", CompleteRequest{}); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("Complete on an unknown server = %v", err)
	}
}

func pngBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRenderer(t *testing.T) {
	store, err := attachments.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img := pngBytes(t)
	pdf := []byte("%PDF-1.4\n%âãÏÓ\n1 0 obj\n")
	contents := []*mcp.ResourceContents{
		{URI: "a://text", MIMEType: "text/plain", Text: "hello"},
		{URI: "a://blobtext", MIMEType: "application/json", Blob: []byte(`{"a":1}`)},
		{URI: "a://img", MIMEType: "image/png", Blob: img},
		{URI: "a://pdf", MIMEType: "application/pdf", Blob: pdf},
	}
	out := Renderer{Store: store}.Contents(ctx, tools.Caller{ImageInput: true}, contents)
	if len(out) != 3 || out[1].Type != "image" || out[1].Image == nil || out[1].Image.Width != 3 {
		t.Fatalf("rendered = %+v, want text, image, text", out)
	}
	wantHead := "Resource a://text (text/plain):\nhello\nResource a://blobtext (application/json):\n{\"a\":1}\nResource a://img (image/png, "
	if !strings.HasPrefix(out[0].Text, wantHead) {
		t.Errorf("first block = %q, want it to start %q", out[0].Text, wantHead)
	}
	if !strings.HasPrefix(out[2].Text, fmt.Sprintf("[binary resource a://pdf: application/pdf, %d bytes, stored as attachment sha256:", len(pdf))) {
		t.Errorf("pdf = %q", out[2].Text)
	}
	id := strings.TrimSuffix(out[2].Text[strings.Index(out[2].Text, "sha256:"):], "]")
	rc, _, err := store.Open(id)
	if err != nil {
		t.Fatalf("the stored blob %s does not open: %v", id, err)
	}
	rc.Close()

	// A caller without image input: the image is stored as a blob and described.
	out = Renderer{Store: store}.Contents(ctx, tools.Caller{}, contents[2:3])
	if len(out) != 1 || !strings.Contains(out[0].Text, "[binary resource a://img: image/png") {
		t.Errorf("image for a text-only caller = %+v", out)
	}
	// No store: described, not kept.
	out = Renderer{}.Contents(ctx, tools.Caller{ImageInput: true}, contents[3:])
	if len(out) != 1 || !strings.Contains(out[0].Text, "not kept: no attachment store is mounted") {
		t.Errorf("pdf without a store = %+v", out)
	}
	long := strings.Repeat("é", MaxInlineText) // 2 bytes each: cut in the middle
	out = Renderer{}.Contents(ctx, tools.Caller{}, []*mcp.ResourceContents{{URI: "a://long", Text: long}})
	if text := out[0].Text; len(text) > MaxInlineText+300 || !strings.Contains(text, "resource text truncated") || strings.ContainsRune(text, '\uFFFD') {
		t.Errorf("a long text was not cut cleanly (%d bytes)", len(text))
	}
	// The marker says the rest is out of the model's reach, rather than
	// pointing at a canonical value no model sees.
	if text := out[0].Text; !strings.HasSuffix(text, fmt.Sprintf("[resource text truncated: %d of %d bytes dropped; a read shows at most %d bytes of text, and the rest is not kept where a model can read it]", MaxInlineText, 2*MaxInlineText, MaxInlineText)) {
		t.Errorf("marker: %q", text[strings.LastIndex(text, "\n"):])
	}

	// An image over the store's limits is downscaled to fit, as a tool
	// result's is, not refused and kept as an opaque blob.
	var shot bytes.Buffer
	if err := png.Encode(&shot, image.NewRGBA(image.Rect(0, 0, 2560, 1440))); err != nil {
		t.Fatal(err)
	}
	out = Renderer{Store: store}.Contents(ctx, tools.Caller{ImageInput: true}, []*mcp.ResourceContents{{URI: "a://shot", MIMEType: "image/png", Blob: shot.Bytes()}})
	if len(out) != 2 || out[1].Image == nil || out[1].Image.Width != 2000 || out[1].Image.Height != 1125 {
		t.Fatalf("a 2560×1440 resource image = %+v, want a note and a 2000×1125 image", out)
	}
	if want := fmt.Sprintf("Resource a://shot (image/png, %d bytes):\n[image downscaled from 2560×1440 to 2000×1125 to fit the attachment limits (scale 1:1.28)]", shot.Len()); out[0].Text != want {
		t.Errorf("before the image: %q, want %q", out[0].Text, want)
	}
}

// TestTools runs mcp_resources and mcp_read through a real host: the
// built-in plugin registers them, and the model-facing text is what the
// model reads.
func TestTools(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := h.Update(context.Background(), &host.Composition{File: "t.yml"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	r, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatalf("no resources service; status %+v", h.Status())
	}
	reg, _ := host.Lookup(h, tools.Key)
	if _, ok := reg.Get(ListToolName); ok {
		t.Error("mcp_resources is offered while no server offers anything to read")
	}
	// A server that lists nothing adds no tools either.
	empty, _ := register(t, r, &fake{server: "empty"}, nil, nil)
	if _, ok := reg.Get(ReadToolName); ok {
		t.Error("mcp_read is offered while no server lists anything")
	}
	_, docs := register(t, r, &fake{server: "docs"}, []*mcp.Resource{{URI: "docs://readme", Name: "readme", MIMEType: "text/markdown", Description: "The README"}},
		[]*mcp.ResourceTemplate{{URITemplate: "docs://page/{n}", Name: "page"}})
	ctx := context.Background()
	caller := tools.Caller{Kind: "test"}
	exec := func(name, args string) tools.Result {
		t.Helper()
		return reg.Execute(ctx, caller, name, json.RawMessage(args))
	}
	list := exec(ListToolName, `{}`)
	if list.Err != nil || !strings.Contains(list.Content[0].Text, "- docs://readme  readme [docs, text/markdown]: The README") ||
		!strings.Contains(list.Content[0].Text, "- docs://page/{n}  page [docs]") {
		t.Errorf("mcp_resources = %+v", list)
	}
	if l, ok := list.Value.(Listing); !ok || len(l.Resources) != 1 || len(l.Templates) != 1 {
		t.Errorf("mcp_resources value = %#v", list.Value)
	}
	if res := exec(ListToolName, `{"server":"nope"}`); res.Err == nil || !strings.Contains(res.Err.Error(), `unknown server "nope" (servers: empty, docs)`) {
		t.Errorf("mcp_resources of an unknown server = %v", res.Err)
	}
	if res := exec(ListToolName, `{"serv":"docs"}`); res.Err == nil {
		t.Error("mcp_resources took an unknown argument")
	}
	read := exec(ReadToolName, `{"uri":"docs://readme"}`)
	if read.Err != nil || read.Content[0].Text != "Resource docs://readme (text/plain):\ndocs says docs://readme" {
		t.Errorf("mcp_read uri = %+v", read)
	}
	page := exec(ReadToolName, `{"template":"docs://page/{n}","arguments":{"n":3}}`)
	if page.Err != nil || !strings.Contains(page.Content[0].Text, "docs says docs://page/3") {
		t.Errorf("mcp_read template = %+v", page)
	}
	for args, want := range map[string]string{
		`{}`: "give uri, or template",
		`{"uri":"docs://readme","template":"docs://page/{n}"}`: "not both",
		`{"template":"docs://page/{n}"}`:                       "missing n",
		`{"uri":"docs://missing","server":"docs"}`:             "resource not found",
		`{"uri":"docs://unlisted"}`:                            "no server lists it or has a template matching it; name the server (servers: empty, docs)",
	} {
		if res := exec(ReadToolName, args); res.Err == nil || !strings.Contains(res.Err.Error(), want) {
			t.Errorf("mcp_read %s = %v, want %q", args, res.Err, want)
		}
	}
	// The schemas are constants: a server's resources never change them.
	defs := map[string]tools.Definition{}
	for _, d := range reg.List(caller) {
		defs[d.Name] = d
	}
	if string(defs[ListToolName].InputSchema) != listToolSchema || string(defs[ReadToolName].InputSchema) != readToolSchema {
		t.Error("the tools' schemas are not the constants")
	}
	for _, schema := range []string{listToolSchema, readToolSchema} {
		if !json.Valid([]byte(schema)) {
			t.Errorf("schema is not JSON: %s", schema)
		}
	}
	// The last server that lists something goes: the tools go too.
	empty.Set(nil, nil)
	if err := docs.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ListToolName, ReadToolName} {
		if _, ok := reg.Get(name); ok {
			t.Errorf("%s is still offered with nothing to read", name)
		}
	}
}

// TestSubscriptionOutlivesProvider: when the owning server's instance goes
// and comes back (a reload), its new provider is subscribed as soon as it
// lists the URI again, and updates reach the old subscriber.
func TestSubscriptionOutlivesProvider(t *testing.T) {
	r := New(nil)
	ctx := context.Background()
	first := &fake{server: "a"}
	_, s1 := register(t, r, first, []*mcp.Resource{{URI: "x://1", Name: "1"}}, nil)
	got := make(chan string, 4)
	if _, err := r.Subscribe(ctx, scope(t, "follower"), "x://1", func(uri string) { got <- uri }); err != nil {
		t.Fatal(err)
	}
	if err := s1.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	second := &fake{server: "a"}
	s2 := scope(t, "a2")
	src, err := r.Register(s2, second.provider())
	if err != nil {
		t.Fatal(err)
	}
	if calls := second.took(); len(calls) != 0 {
		t.Errorf("a provider that lists nothing yet was asked %v", calls)
	}
	src.Set([]*mcp.Resource{{URI: "x://1", Name: "1"}}, nil)
	if diff := cmp.Diff([]string{"subscribe x://1"}, second.took()); diff != "" {
		t.Errorf("the new provider was asked (-want +got):\n%s", diff)
	}
	src.Updated("x://1")
	if uri := <-got; uri != "x://1" {
		t.Errorf("update %q", uri)
	}
	if calls := first.took(); len(calls) != 1 || calls[0] != "subscribe x://1" {
		t.Errorf("the old provider was asked %v, want only the first subscribe", calls)
	}
}

// A second subscriber to a URI whose first provider Subscribe is still in
// flight waits for the server's answer: when the first fails, so does the
// second, rather than holding a subscription with nothing behind it.
func TestSubscribeWhileTheFirstIsInFlight(t *testing.T) {
	r := New(nil)
	entered, answer := make(chan struct{}), make(chan error)
	p := (&fake{server: "a"}).provider()
	p.Subscribe = func(context.Context, string) error {
		entered <- struct{}{}
		return <-answer
	}
	src, err := r.Register(scope(t, "a"), p)
	if err != nil {
		t.Fatal(err)
	}
	src.Set([]*mcp.Resource{{URI: "x://1", Name: "1"}}, nil)
	s1, s2, s3 := scope(t, "one"), scope(t, "two"), scope(t, "impatient")
	first, second := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := r.Subscribe(context.Background(), s1, "x://1", func(string) {})
		first <- err
	}()
	<-entered
	// One that cannot wait gives up, holding nothing.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Subscribe(gone, s3, "x://1", func(string) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a subscriber whose ctx ended while the first was in flight: %v, want ctx's error", err)
	}
	go func() {
		_, err := r.Subscribe(context.Background(), s2, "x://1", func(string) {})
		second <- err
	}()
	answer <- errors.New("refused")
	if err := <-first; err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("first: %v", err)
	}
	// The second waited for that answer, or came after it and asked the
	// server itself.
	for {
		select {
		case <-entered:
			answer <- errors.New("refused again")
			continue
		case err = <-second:
		}
		break
	}
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("second: %v, want the server's refusal", err)
	}
	if r.Subscribed("x://1") {
		t.Error("a subscriber is left on a subscription the server refused")
	}
}

// A provider that comes back takes up its followers' subscriptions
// together, within one bound, not one URI after another (each up to its
// own timeout, while the instance's supervisor waits in Set): here each
// subscribe answers only once both are in flight.
func TestResubscribeTogether(t *testing.T) {
	r := New(nil)
	ctx := context.Background()
	listed := []*mcp.Resource{{URI: "x://1", Name: "1"}, {URI: "x://2", Name: "2"}}
	_, s1 := register(t, r, &fake{server: "a"}, listed, nil)
	follower := scope(t, "follower")
	for _, uri := range []string{"x://1", "x://2"} {
		if _, err := r.Subscribe(ctx, follower, uri, func(string) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s1.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	in, both := 0, make(chan struct{})
	p := (&fake{server: "a"}).provider()
	p.Subscribe = func(ctx context.Context, _ string) error {
		mu.Lock()
		if in++; in == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	src, err := r.Register(scope(t, "a2"), p)
	if err != nil {
		t.Fatal(err)
	}
	src.Set(listed, nil)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.held["x://1"] != src || r.held["x://2"] != src {
		t.Errorf("held = %v, want both URIs on the new provider", r.held)
	}
}
