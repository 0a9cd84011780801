package mcpclient_test

// Resources, templates, subscriptions and completion end to end: real
// servers (the pinned server-everything and the in-repo fixture with
// -resources) behind mcp-client instances, reached only through the host's
// services, as the model, the console and the CLI reach them.

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

func (hs *harness) resources() *resources.Registry {
	hs.t.Helper()
	return service(hs, resources.Key)
}

func resourceURIs(list []resources.Resource) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.URI
	}
	return out
}

func templateURIs(list []resources.Template) []string {
	out := make([]string, len(list))
	for i, t := range list {
		out[i] = t.URITemplate
	}
	return out
}

func TestE2EEverythingResources(t *testing.T) {
	hs := newHarness(t)
	hs.applyNode("everything", mcptest.ServerEverything, "stdio")
	reg := hs.resources()
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()

	const doc = "demo://resource/static/document/architecture.md"
	if got := resourceURIs(reg.List(resources.Filter{Server: "everything"})); !slices.Contains(got, doc) {
		t.Fatalf("server-everything's resources %q lack %s", got, doc)
	}
	const textTmpl, blobTmpl = "demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"
	if got := templateURIs(reg.Templates(resources.Filter{})); !slices.Contains(got, textTmpl) || !slices.Contains(got, blobTmpl) {
		t.Fatalf("templates = %q, want the text and blob ones", got)
	}
	read, err := reg.Read(ctx, doc, nil)
	if err != nil || read.Server != "everything" || len(read.Contents) != 1 || read.Contents[0].MIMEType != "text/markdown" || !strings.Contains(read.Contents[0].Text, "#") {
		t.Fatalf("Read(%s) = %+v, %v", doc, read, err)
	}

	// The model's two tools.
	list := hs.call(modelCaller, resources.ListToolName, map[string]any{"query": "architecture"})
	if list.Err != nil || !strings.Contains(text(list), doc) || strings.Contains(text(list), "instructions.md") {
		t.Errorf("mcp_resources query = %q (%v)", text(list), list.Err)
	}
	page := hs.call(modelCaller, resources.ReadToolName, map[string]any{"template": textTmpl, "arguments": map[string]any{"resourceId": 3}})
	if page.Err != nil || !strings.Contains(text(page), "Resource demo://resource/dynamic/text/3 (text/plain):\nResource 3: This is a plaintext resource") {
		t.Errorf("mcp_read text template = %q (%v)", text(page), page.Err)
	}
	// A base64 blob declared text/plain reads as text.
	blob := hs.call(modelCaller, resources.ReadToolName, map[string]any{"template": blobTmpl, "arguments": map[string]any{"resourceId": "2"}})
	if blob.Err != nil || !strings.Contains(text(blob), "Resource 2: This is a base64 blob") {
		t.Errorf("mcp_read blob template = %q (%v)", text(blob), blob.Err)
	}
	if bad := hs.call(modelCaller, resources.ReadToolName, map[string]any{"uri": "demo://resource/dynamic/text/zero"}); bad.Err == nil || !strings.Contains(bad.Err.Error(), "mcp-client(everything): read demo://resource/dynamic/text/zero: the server answered with an error") {
		t.Errorf("mcp_read of an unknown resource = %v, want the server's error naming it", bad.Err)
	}

	// completion/complete for a template argument.
	got, err := reg.Complete(ctx, "everything", resources.CompleteRequest{
		Ref: mcpRef("ref/resource", "", textTmpl), Argument: "resourceId", Value: "42",
	})
	if err != nil || !cmp.Equal(got, []string{"42"}) {
		t.Errorf("Complete(resourceId=42) = %q, %v", got, err)
	}

	// A resource the server adds at runtime arrives by list_changed.
	dataURI := "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("zip me"))
	gz := hs.call(modelCaller, mcpclient.PublicToolName("everything", "gzip-file-as-resource"), map[string]any{"name": "note.gz", "data": dataURI})
	if gz.Err != nil {
		t.Fatalf("gzip-file-as-resource: %v", gz.Err)
	}
	const session = "demo://resource/session/note.gz"
	eventually(t, "the session resource to be listed", func() bool {
		return slices.Contains(resourceURIs(reg.List(resources.Filter{})), session)
	})
	// Its gzip bytes are stored, described by type and size.
	gzRead := hs.call(modelCaller, resources.ReadToolName, map[string]any{"uri": session})
	want := "[binary resource " + session + ": application/gzip, "
	if gzRead.Err != nil || !strings.HasPrefix(text(gzRead), want) || !strings.Contains(text(gzRead), "stored as attachment sha256:") {
		t.Errorf("mcp_read of a gzip = %q (%v), want it to start %q", text(gzRead), gzRead.Err, want)
	}
}

func TestE2EEverythingSubscribe(t *testing.T) {
	hs := newHarness(t)
	hs.applyNode("everything", mcptest.ServerEverything, "stdio")
	reg := hs.resources()
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()

	const doc = "demo://resource/static/document/architecture.md"
	_, updates := subscribeUpdates(t, ctx, reg, doc)
	// The server sends resources/updated for subscribed URIs once this
	// tool is on: at once, then every 5s.
	if res := hs.call(modelCaller, mcpclient.PublicToolName("everything", "toggle-subscriber-updates"), nil); res.Err != nil {
		t.Fatalf("toggle-subscriber-updates: %v", res.Err)
	}
	select {
	case uri := <-updates:
		if uri != doc {
			t.Errorf("update for %q, want %q", uri, doc)
		}
	case <-time.After(e2eWait):
		t.Fatal("no resources/updated reached the subscriber")
	}
}

func TestE2EEverythingPrompts(t *testing.T) {
	hs := newHarness(t)
	hs.applyNode("everything", mcptest.ServerEverything, "stdio")
	cmds := hs.commands()
	names := map[string]bool{}
	for _, c := range cmds.List() {
		names[c.Name] = true
	}
	for _, p := range []string{"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} {
		if !names[mcpclient.PublicPromptName("everything", p)] {
			t.Errorf("no command for the prompt %s; commands: %v", p, names)
		}
	}
	run := func(line string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
		defer cancel()
		r := cmds.Run(ctx, tools.Caller{Kind: "test"}, line)
		return r.Text, r.Error
	}
	for line, want := range map[string]string{
		"/mcp__everything__simple-prompt":                      "[user]\nThis is a simple prompt without arguments.",
		"/mcp__everything__args-prompt city=Paris":             "[user]\nWhat's weather in Paris?",
		"/mcp__everything__args-prompt Paris France":           "[user]\nWhat's weather in Paris, France?",
		`/mcp__everything__args-prompt state=TX "San Antonio"`: "[user]\nWhat's weather in San Antonio, TX?",
	} {
		if got, isErr := run(line); isErr || got != want {
			t.Errorf("%s = %q (error %v), want %q", line, got, isErr, want)
		}
	}
	if got, isErr := run("/mcp__everything__args-prompt"); !isErr || !strings.Contains(got, "missing required argument(s): city (Name of the city)") {
		t.Errorf("a missing required argument = %q (error %v)", got, isErr)
	}
	if got, isErr := run("/mcp__everything__args-prompt a b c"); !isErr || !strings.Contains(got, `too many arguments: "c"`) {
		t.Errorf("one argument too many = %q (error %v)", got, isErr)
	}
	// An embedded resource comes with its URI.
	got, isErr := run("/mcp__everything__resource-prompt resourceType=Text resourceId=2")
	if isErr || !strings.Contains(got, "Resource demo://resource/dynamic/text/2 (text/plain):\nResource 2: This is a plaintext resource") {
		t.Errorf("resource-prompt = %q (error %v)", got, isErr)
	}

	// completion/complete for prompt arguments, as /complete shows it.
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()
	for line, want := range map[string][]string{
		"/mcp__everything__completable-prompt department=E": {"department=Engineering"},
		// The second argument's values depend on the first (context).
		"/mcp__everything__completable-prompt Sales ":  {"David", "Eve", "Frank"},
		"/mcp__everything__completable-prompt Sales E": {"Eve"},
	} {
		got, err := cmds.Complete(ctx, line)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("Complete(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
	if got, isErr := run("/complete /mcp__everything__completable-prompt department=Sa"); isErr || got != "department=Sales" {
		t.Errorf("/complete = %q (error %v)", got, isErr)
	}
}

// TestE2EFixtureResourcesAndPrompts covers what server-everything does not:
// pages, an image and a binary resource, and prompts added at runtime.
func TestE2EFixtureResourcesAndPrompts(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", nil, "-resources", "25", "-prompts", "-page-size", "4"))
	hs.requireActive("fx")
	reg := hs.resources()

	got := resourceURIs(reg.List(resources.Filter{Server: "fx"}))
	if len(got) != 27 || !slices.Contains(got, "fixture://doc/025") || !slices.Contains(got, "fixture://image.png") {
		t.Fatalf("listed %d resources over pages of 4: %q", len(got), got)
	}
	if tmpl := templateURIs(reg.Templates(resources.Filter{})); !cmp.Equal(tmpl, []string{"fixture://doc/{n}"}) {
		t.Errorf("templates = %q", tmpl)
	}

	// An image goes to the attachment store for an image-capable caller.
	img := hs.call(imageCaller, resources.ReadToolName, map[string]any{"uri": "fixture://image.png"})
	refs := images(img)
	if img.Err != nil || len(refs) != 1 || refs[0].Width != 4 {
		t.Fatalf("mcp_read image = %+v (%v)", img.Content, img.Err)
	}
	rc, _, err := hs.store().Open(refs[0].ID)
	if err != nil {
		t.Fatalf("the image's reference does not open: %v", err)
	}
	rc.Close()
	// Other bytes are stored as a blob and described.
	bin := hs.call(modelCaller, resources.ReadToolName, map[string]any{"uri": "fixture://data.bin"})
	if bin.Err != nil || !strings.HasPrefix(text(bin), "[binary resource fixture://data.bin: application/octet-stream, 256 bytes, stored as attachment sha256:") {
		t.Errorf("mcp_read binary = %q (%v)", text(bin), bin.Err)
	}
	id := text(bin)[strings.Index(text(bin), "sha256:") : len(text(bin))-1]
	if rc, _, err := hs.store().Open(id); err != nil {
		t.Errorf("the blob %s does not open: %v", id, err)
	} else {
		b, _ := io.ReadAll(rc)
		rc.Close()
		if len(b) != 256 || b[255] != 255 {
			t.Errorf("the stored blob has %d bytes", len(b))
		}
	}

	// list_changed for resources and for prompts re-syncs each.
	if res := hs.call(modelCaller, mcpclient.PublicToolName("fx", "add-resource"), map[string]any{"name": "late"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	eventually(t, "the added resource", func() bool {
		return slices.Contains(resourceURIs(reg.List(resources.Filter{})), "fixture://added/late")
	})
	cmds := hs.commands()
	if res := hs.call(modelCaller, mcpclient.PublicToolName("fx", "add-prompt"), map[string]any{"name": "later"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	eventually(t, "the added prompt's command", func() bool {
		return slices.ContainsFunc(cmds.List(), func(c commandsCommand) bool { return c.Name == "mcp__fx__later" })
	})

	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()
	if r := cmds.Run(ctx, tools.Caller{Kind: "test"}, "/mcp__fx__echo ab times=3"); r.Error || r.Text != "echo\n\n[user]\nababab" {
		t.Errorf("/mcp__fx__echo = %+v", r)
	}
	if r := cmds.Run(ctx, tools.Caller{Kind: "test"}, "/mcp__fx__echo ab times=0"); !r.Error || !strings.Contains(r.Text, "the server answered with an error") {
		t.Errorf("a prompt the server refuses = %+v", r)
	}
	r := cmds.Run(ctx, tools.Caller{Kind: "test"}, "/mcp__fx__picture")
	wantPicture := regexpLines(t, r.Text, []string{
		`^\[user\]$`, `^Look at this:$`, `^$`, `^\[user\]$`, `^\[image sha256:[0-9a-f]{64} image/png 4x4, \d+ bytes\]$`,
		`^$`, `^\[assistant\]$`, `^Resource fixture://note \(text/plain\):$`, `^a note$`,
	})
	if r.Error || !wantPicture {
		t.Errorf("/mcp__fx__picture = %+v", r)
	}

	// Disposing the instance withdraws its resources and prompt commands.
	hs.apply()
	if n := len(reg.List(resources.Filter{})); n != 0 {
		t.Errorf("%d resources left after the instance went away", n)
	}
	if slices.ContainsFunc(hs.commands().List(), func(c commandsCommand) bool { return strings.HasPrefix(c.Name, "mcp__fx__") }) {
		t.Error("prompt commands left after the instance went away")
	}
}

func regexpLines(t *testing.T, text string, patterns []string) bool {
	t.Helper()
	lines := strings.Split(text, "\n")
	if len(lines) != len(patterns) {
		t.Logf("%d lines, want %d:\n%s", len(lines), len(patterns), text)
		return false
	}
	for i, p := range patterns {
		if !mustMatch(p, lines[i]) {
			t.Logf("line %d %q does not match %s", i+1, lines[i], p)
			return false
		}
	}
	return true
}

func (hs *harness) commands() *commands.Registry {
	hs.t.Helper()
	return service(hs, commands.Key)
}

type commandsCommand = commands.Command

func mcpRef(typ, name, uri string) mcp.CompleteReference {
	return mcp.CompleteReference{Type: typ, Name: name, URI: uri}
}

func mustMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// TestE2ESubscriptionRenewedAfterReconnect: a subscription made through the
// service outlives a server crash (the client subscribes again on the new
// connection) and a reload of the instance (the new instance takes it up),
// and updates reach the subscriber each time. The last subscriber leaving
// unsubscribes on the server.
func TestE2ESubscriptionRenewedAfterReconnect(t *testing.T) {
	hs := newHarness(t)
	events := filepath.Join(t.TempDir(), "events")
	hs.apply(stdioFixture(t, "fx", "fx", nil, "-resources", "2", "-cancel-file", events))
	hs.requireActive("fx")
	reg := hs.resources()
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()

	const doc = "fixture://doc/001"
	sub, updates := subscribeUpdates(t, ctx, reg, doc)
	// Over the 2026-07-28 protocol go-sdk subscribes on a stream of its own
	// and returns at once: wait for the server to have it.
	eventually(t, "the subscription on the server", func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), "subscribe "+doc+"\n")
	})
	touch := mcpclient.PublicToolName("fx", "touch-resource")
	// go-sdk's server calls its subscribe handler (which logs the event)
	// just before it records the subscription, so a touch may still come
	// too early: touch until an update arrives.
	expectUpdate := func(when string) {
		t.Helper()
		eventually(t, "an update to reach the subscriber "+when, func() bool {
			if res := hs.call(modelCaller, touch, map[string]any{"uri": doc}); res.Err != nil {
				t.Fatalf("touch-resource %s: %v", when, res.Err)
			}
			select {
			case uri := <-updates:
				if uri != doc {
					t.Fatalf("update %s for %q", when, uri)
				}
				return true
			case <-time.After(100 * time.Millisecond):
				return false
			}
		})
	}
	expectUpdate("before the crash")

	hs.call(modelCaller, mcpclient.PublicToolName("fx", "crash"), nil)
	eventually(t, "the subscription renewed on the new server", func() bool {
		return eventLines(events, "subscribe "+doc) >= 2
	})
	expectUpdate("after the reconnect")

	// A reload replaces the instance: the new one takes the subscription up.
	hs.apply(stdioFixture(t, "fx", "fx", nil, "-resources", "2", "-cancel-file", events, "-instructions", "reloaded"))
	hs.requireActive("fx")
	eventually(t, "the subscription taken up by the reloaded instance", func() bool {
		return eventLines(events, "subscribe "+doc) >= 3
	})
	expectUpdate("after a reload")

	if err := sub.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unsubscribe", func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), "unsubscribe "+doc+"\n")
	})
}

// eventLines counts the lines of the fixture's events file that are line
// ("subscribe X" is not counted in "unsubscribe X").
func eventLines(path, line string) int {
	b, _ := os.ReadFile(path)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == line {
			n++
		}
	}
	return n
}

// TestE2EEverythingResourcesHTTP: resources, a subscription's updates and a
// prompt over Streamable HTTP, where notifications come on the session's
// stream.
func TestE2EEverythingResourcesHTTP(t *testing.T) {
	url := mcptest.StartEverythingHTTP(t)
	hs := newHarness(t)
	hs.apply(host.Entry{ID: "everything", Name: "mcp-client", Config: map[string]any{
		"transport": "streamable-http", "serverName": "everything", "url": url,
	}})
	hs.requireActive("everything")
	reg := hs.resources()
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()

	const doc = "demo://resource/static/document/architecture.md"
	if res, err := reg.Read(ctx, doc, nil); err != nil || len(res.Contents) != 1 || res.Contents[0].Text == "" {
		t.Fatalf("Read over HTTP = %+v, %v", res, err)
	}
	_, updates := subscribeUpdates(t, ctx, reg, doc)
	if res := hs.call(modelCaller, mcpclient.PublicToolName("everything", "toggle-subscriber-updates"), nil); res.Err != nil {
		t.Fatalf("toggle-subscriber-updates: %v", res.Err)
	}
	select {
	case <-updates:
	case <-time.After(e2eWait):
		// Server-initiated messages over Streamable HTTP come on go-sdk's
		// standalone GET stream, which go-sdk opens only on its own
		// connection type: a wrapper around the mcp.Connection hides it.
		t.Fatal("no resources/updated over HTTP: did the standalone SSE stream (GET) open? a wrapper of the mcp.Connection turns it off")
	}
	r := hs.commands().Run(ctx, tools.Caller{Kind: "test"}, "/mcp__everything__args-prompt Oslo")
	if r.Error || r.Text != "[user]\nWhat's weather in Oslo?" {
		t.Errorf("prompt over HTTP = %+v", r)
	}
}

// TestResourceToolsInThePrompt: mcp_resources and mcp_read reach the model
// whether the composition folds or not, with the same bytes; the log gives
// the prompt's size with and without them (the note's figure).
func TestResourceToolsInThePrompt(t *testing.T) {
	hs := newHarness(t)
	server := stdioFixture(t, "fx", "fx", nil, "-resources", "3")
	fold := host.Entry{ID: "fold", Name: "mcp-fold"}
	sizes := map[bool][2]int{}
	for _, folded := range []bool{false, true} {
		if folded {
			hs.apply(server, fold)
		} else {
			hs.apply(server)
		}
		asm, err := hs.registry().Assemble(t.Context(), modelCaller)
		if err != nil {
			t.Fatal(err)
		}
		all, err := asm.ToolsJSON()
		if err != nil {
			t.Fatal(err)
		}
		var ours tools.Assembly
		for _, s := range asm.Tools {
			if s.Name == resources.ListToolName || s.Name == resources.ReadToolName {
				ours.Tools = append(ours.Tools, s)
			}
		}
		if len(ours.Tools) != 2 {
			t.Fatalf("folded=%v: the prompt has %d of the two resource tools", folded, len(ours.Tools))
		}
		mine, _ := ours.ToolsJSON()
		resourceBytes := len(mine) - 1 // one array's brackets, plus the comma joining it to the rest
		sizes[folded] = [2]int{len(all), resourceBytes}
		t.Logf("folded=%v: %d tools, %d bytes; mcp_resources and mcp_read %d bytes; without them %d",
			folded, len(asm.Tools), len(all), resourceBytes, len(all)-resourceBytes)
	}
	if sizes[false][1] != sizes[true][1] {
		t.Errorf("the resource tools take %d bytes unfolded and %d folded; their schemas are constants", sizes[false][1], sizes[true][1])
	}
}

// TestE2EResourcesListCapped: a server that lists more than 10,000
// resources gives the first 10,000, and the cut is logged once however
// often the list is taken again.
func TestE2EResourcesListCapped(t *testing.T) {
	hs := newHarness(t)
	// 10,000 documents, an image and a binary: two over the cap.
	hs.apply(stdioFixture(t, "big", "big", nil, "-resources", "10000", "-page-size", "2500"))
	hs.requireActive("big")
	reg := hs.resources()
	list := reg.List(resources.Filter{Server: "big"})
	// The server lists in URI order: the image comes last, and is cut.
	if len(list) != 10000 || slices.ContainsFunc(list, func(r resources.Resource) bool { return r.URI == "fixture://image.png" }) {
		t.Fatalf("listed %d resources, want the first 10000", len(list))
	}
	// A list_changed lists again (fixture://added/late comes first): still
	// cut, not logged again.
	if res := hs.call(modelCaller, mcpclient.PublicToolName("big", "add-resource"), map[string]any{"name": "late"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	eventually(t, "the second listing", func() bool {
		list := reg.List(resources.Filter{Server: "big"})
		return len(list) == 10000 && list[0].URI == "fixture://added/late"
	})
	if n := strings.Count(hs.logs.String(), "lists more than 10000 entries in resources/list"); n != 1 {
		t.Errorf("the cut was logged %d times, want once:\n%s", n, hs.logs.String())
	}
}

// subscribeUpdates subscribes to uri on a scope of its own, disposed when
// the test ends (or earlier by the caller), and returns the scope and the
// channel its updates arrive on.
func subscribeUpdates(t *testing.T, ctx context.Context, reg *resources.Registry, uri string) (*host.Scope, <-chan string) {
	t.Helper()
	sub := host.NewScope(ctx, "subscriber", nil)
	t.Cleanup(func() { sub.Dispose(time.Second) })
	updates := make(chan string, 16)
	if _, err := reg.Subscribe(ctx, sub, uri, func(uri string) {
		select {
		case updates <- uri:
		default:
		}
	}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return sub, updates
}

// A prompt got without arguments carries "arguments": {} on every
// transport: the fixture's picture prompt, like any zod-validated one,
// refuses a prompts/get without it (go-sdk drops an empty map).
func TestE2EPromptWithoutArgumentsSendsEmptyObject(t *testing.T) {
	for _, transport := range []string{"stdio", "streamable-http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			hs := newHarness(t)
			entry := stdioFixture(t, "fx", "fx", nil, "-prompts")
			if transport != "stdio" {
				// Started after the harness, so stopped before its check
				// for processes left behind.
				base := strings.TrimSuffix(mcptest.StartHTTPFixture(t, "-sse", "-prompts"), "/mcp")
				url := base + "/mcp"
				if transport == "sse" {
					url = base + "/sse"
				}
				entry = host.Entry{ID: "fx", Name: "mcp-client", Config: map[string]any{"transport": transport, "serverName": "fx", "url": url}}
			}
			hs.apply(entry)
			hs.requireActive("fx")
			ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
			defer cancel()
			r := hs.commands().Run(ctx, tools.Caller{Kind: "test"}, "/mcp__fx__picture")
			if r.Error || !strings.Contains(r.Text, "Look at this:") {
				t.Errorf("/mcp__fx__picture = %+v", r)
			}
		})
	}
}
