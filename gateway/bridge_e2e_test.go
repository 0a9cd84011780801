package gateway

// End-to-end tests of what the gateway bridges besides tools: resources,
// templates, subscriptions, prompts, completion, and a server's questions
// (elicitation, sampling) forwarded to the calling client, with go-sdk
// clients of both protocol styles and the MCP Inspector CLI.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// bridgeFixtureArgs give the fixture resources, a template, prompts,
// completion and the tools that ask the client (ask, ask-url, sample).
var bridgeFixtureArgs = []string{"-resources", "3", "-prompts", "-complete", "-elicit", "-sample"}

// writeBridge writes e's composition with the fixture given args, unfolded
// (its tools are served as mcp__fx__<tool>).
func (e *e2e) writeBridge(t *testing.T, args ...string) {
	t.Helper()
	writeFile(t, e.composition, e.fixtureEntry(args...))
}

// bridgeClient is a go-sdk client of the gateway that records what the
// gateway sends it besides answers.
type bridgeClient struct {
	cs       *mcp.ClientSession
	updated  chan string
	promptsC chan struct{}
	resC     chan struct{}
}

// connectBridge connects a go-sdk client over tr. opts may set the
// elicitation and sampling handlers; version pins the protocol ("" for
// go-sdk's latest, 2026-07-28).
func connectBridge(t *testing.T, tr mcp.Transport, opts mcp.ClientOptions, version string) *bridgeClient {
	t.Helper()
	b := &bridgeClient{updated: make(chan string, 10), promptsC: make(chan struct{}, 10), resC: make(chan struct{}, 10)}
	opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		b.updated <- req.Params.URI
	}
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) {
		select {
		case b.promptsC <- struct{}{}:
		default:
		}
	}
	opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) {
		select {
		case b.resC <- struct{}{}:
		default:
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bridge-e2e", Version: "0"}, &opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	b.cs = cs
	// serve --stdio answers before a slow server is connected (it then
	// comes with list_changed): wait for the fixture's tools, resources
	// and prompts, then forget the notifications that brought them.
	awaitFixture(t, cs)
	waitFor(t, "the fixture server's resources and prompts", func() bool {
		tl, err := cs.ListTools(ctx, nil)
		if err != nil {
			return false
		}
		if caps := cs.InitializeResult().Capabilities; caps.Resources == nil {
			return true
		}
		rl, err := cs.ListResources(ctx, nil)
		pl, err2 := cs.ListPrompts(ctx, nil)
		return err == nil && err2 == nil && (len(rl.Resources) > 0 || len(pl.Prompts) > 0 || !fixtureOffersMore(tl.Tools))
	})
	for _, ch := range []chan struct{}{b.promptsC, b.resC} {
		for len(ch) > 0 {
			<-ch
		}
	}
	return b
}

// fixtureOffersMore reports whether the fixture was started with resources
// or prompts: its tools then include add-resource.
func fixtureOffersMore(tools []*mcp.Tool) bool {
	return slices.ContainsFunc(tools, func(tool *mcp.Tool) bool { return strings.HasSuffix(tool.Name, "add-resource") })
}

// ctxT bounds a whole test's requests (one context for all of them, a
// dsh-host start included): a hang guard, so several times wait.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
	t.Cleanup(cancel)
	return ctx
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestE2EBridgeResourcesPromptsCompletion(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, bridgeFixtureArgs...)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+cmpOr(version, "latest"), func(t *testing.T) {
			c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{}, version)
			ctx := ctxT(t)

			caps := c.cs.InitializeResult().Capabilities
			if caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Completions == nil {
				t.Fatalf("capabilities = %+v, want resources (subscribe, listChanged), prompts (listChanged) and completions", caps)
			}

			var uris []string
			for r, err := range c.cs.Resources(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				uris = append(uris, r.URI)
			}
			for _, want := range []string{"fixture://doc/001", "fixture://doc/003", "fixture://image.png", "fixture://data.bin"} {
				if !slices.Contains(uris, want) {
					t.Errorf("resources/list = %v, want %s among them (URIs unchanged)", uris, want)
				}
			}
			read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://doc/002"})
			if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "the text of fixture://doc/002" {
				t.Errorf("resources/read fixture://doc/002 = %+v, %v; want the fixture's text", read, err)
			}
			bin, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://data.bin"})
			if err != nil || len(bin.Contents) != 1 || len(bin.Contents[0].Blob) != 256 || bin.Contents[0].Blob[255] != 255 {
				t.Errorf("resources/read fixture://data.bin = %+v, %v; want its 256 bytes", bin, err)
			}

			var templates []string
			for rt, err := range c.cs.ResourceTemplates(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				templates = append(templates, rt.URITemplate)
			}
			if !slices.Equal(templates, []string{"fixture://doc/{n}"}) {
				t.Errorf("resources/templates/list = %v, want [fixture://doc/{n}]", templates)
			}
			// A URI only the template matches.
			if read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://doc/42"}); err != nil || read.Contents[0].Text != "the text of fixture://doc/42" {
				t.Errorf("resources/read through the template = %+v, %v", read, err)
			}
			// The server's own not-found error reaches the client.
			if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://doc/x"}); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("resources/read of a URI the server does not have: err = %v, want its not-found error", err)
			}

			var prompts []string
			for p, err := range c.cs.Prompts(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				prompts = append(prompts, p.Name)
				if p.Name == "mcp__fx__echo" && (len(p.Arguments) != 2 || p.Arguments[0].Name != "text" || !p.Arguments[0].Required || p.Description != "Repeat a text.") {
					t.Errorf("prompt echo = %+v, want the fixture's description and arguments", p)
				}
			}
			if !slices.Contains(prompts, "mcp__fx__echo") || !slices.Contains(prompts, "mcp__fx__picture") {
				t.Errorf("prompts/list = %v, want mcp__fx__echo and mcp__fx__picture (named like tools)", prompts)
			}
			got, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__fx__echo", Arguments: map[string]string{"text": "hi", "times": "3"}})
			if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "hihihi" {
				t.Errorf("prompts/get echo = %+v, %v; want the message hihihi", got, err)
			}
			pic, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__fx__picture"})
			if err != nil || len(pic.Messages) != 3 {
				t.Fatalf("prompts/get picture = %+v, %v; want its 3 messages", pic, err)
			}
			if img, ok := pic.Messages[1].Content.(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || len(img.Data) == 0 {
				t.Errorf("picture's second message = %#v, want the fixture's PNG as it sent it", pic.Messages[1].Content)
			}
			if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__fx__echo", Arguments: map[string]string{"text": "hi", "times": "zero"}}); err == nil || !strings.Contains(err.Error(), "times must be a positive number") {
				t.Errorf("prompts/get with a bad argument: err = %v, want the server's message", err)
			}

			comp, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__fx__echo"}, Argument: mcp.CompleteParamsArgument{Name: "text", Value: "al"}})
			if err != nil || !slices.Equal(comp.Completion.Values, []string{"ref/prompt:text:alpha", "ref/prompt:text:alpine"}) {
				t.Errorf("complete a prompt argument = %+v, %v; want the fixture's alpha, alpine", comp, err)
			}
			comp, err = c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "fixture://doc/{n}"}, Argument: mcp.CompleteParamsArgument{Name: "n", Value: "b"}})
			if err != nil || !slices.Equal(comp.Completion.Values, []string{"ref/resource:n:beta"}) {
				t.Errorf("complete a template argument = %+v, %v; want the fixture's beta", comp, err)
			}

			// A subscription: the server's update reaches the client.
			if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fixture://doc/001"}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			// go-sdk's 2026-07-28 Subscribe returns before the server has
			// taken the subscription (its listen stream goes on in the
			// background): touch until an update arrives.
			deadline := time.After(wait)
			for got := false; !got; {
				if res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__touch-resource", Arguments: map[string]any{"uri": "fixture://doc/001"}}); err != nil || res.IsError {
					t.Fatalf("touch-resource: %+v, %v", res, err)
				}
				select {
				case uri := <-c.updated:
					if uri != "fixture://doc/001" {
						t.Errorf("resources/updated for %q, want fixture://doc/001", uri)
					}
					got = true
				case <-time.After(200 * time.Millisecond):
				case <-deadline:
					t.Fatal("no notifications/resources/updated reached the subscribed client")
				}
			}
			if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "fixture://doc/001"}); err != nil {
				t.Errorf("unsubscribe: %v", err)
			}
		})
	}
}

func TestE2EBridgeListChanged(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, bridgeFixtureArgs...)
	c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{}, "2025-11-25")
	ctx := ctxT(t)

	if res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__add-prompt", Arguments: map[string]any{"name": "later"}}); err != nil || res.IsError {
		t.Fatalf("add-prompt: %+v, %v", res, err)
	}
	select {
	case <-c.promptsC:
	case <-time.After(wait):
		t.Fatal("no notifications/prompts/list_changed after the server added a prompt")
	}
	waitFor(t, "prompts/list to show mcp__fx__later", func() bool {
		res, err := c.cs.ListPrompts(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "mcp__fx__later" })
	})
	got, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__fx__later"})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "added prompt later" {
		t.Errorf("prompts/get of the added prompt = %+v, %v", got, err)
	}

	if res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__add-resource", Arguments: map[string]any{"name": "new"}}); err != nil || res.IsError {
		t.Fatalf("add-resource: %+v, %v", res, err)
	}
	select {
	case <-c.resC:
	case <-time.After(wait):
		t.Fatal("no notifications/resources/list_changed after the server added a resource")
	}
	waitFor(t, "resources/list to show fixture://added/new", func() bool {
		res, err := c.cs.ListResources(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == "fixture://added/new" })
	})
}

// TestE2EBridgeCapabilitiesUpFront: the capabilities are known before any
// server is listed, since a client reads them once and a server that
// offers resources or prompts may come later (a lazy one at its first
// call): over a tools-only server they are all there, with empty lists.
func TestE2EBridgeCapabilitiesUpFront(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t) // the plain fixture: tools only
	c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{}, "")
	caps := c.cs.InitializeResult().Capabilities
	if caps.Tools == nil || !caps.Tools.ListChanged || caps.Resources == nil || !caps.Resources.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Completions == nil {
		t.Errorf("capabilities over a tools-only server = %+v; want tools, resources, prompts (each listChanged) and completions", caps)
	}
	ctx := ctxT(t)
	if res, err := c.cs.ListPrompts(ctx, nil); err != nil || len(res.Prompts) != 0 {
		t.Errorf("prompts/list = %+v, %v; want none", res, err)
	}
	if res, err := c.cs.ListResources(ctx, nil); err != nil || len(res.Resources) != 0 {
		t.Errorf("resources/list = %+v, %v; want none", res, err)
	}
}

func TestE2EBridgeElicitation(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, bridgeFixtureArgs...)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+cmpOr(version, "latest"), func(t *testing.T) {
			asked := make(chan *mcp.ElicitParams, 4)
			c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- req.Params
					if req.Params.Mode == "url" {
						return &mcp.ElicitResult{Action: "accept"}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "color": "r", "count": 2}}, nil
				},
			}, version)
			ctx := ctxT(t)

			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ask", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("ask: %+v, %v", res, err)
			}
			var answer struct {
				Action  string
				Content map[string]any
			}
			if err := json.Unmarshal([]byte(resultText(res)), &answer); err != nil || answer.Action != "accept" || answer.Content["name"] != "Ada" || answer.Content["color"] != "r" {
				t.Errorf("the server got %q (%v), want the client's accepted answer", resultText(res), err)
			}
			select {
			case p := <-asked:
				if p.Message != "Tell me about you" || p.RequestedSchema == nil {
					t.Errorf("the client was asked %+v, want the server's message and schema", p)
				}
			default:
				t.Error("the client's elicitation handler was not called")
			}

			res, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ask-url", Arguments: map[string]any{"url": "https://example.com/signin"}})
			if err != nil || res.IsError || !strings.Contains(resultText(res), `"action":"accept"`) {
				t.Errorf("ask-url: %+v (%s), %v; want accepted", res, resultText(res), err)
			}
			if p := <-asked; p.Mode != "url" || p.URL != "https://example.com/signin" || p.ElicitationID != "el-1" {
				t.Errorf("the client was asked %+v, want the server's URL request", p)
			}
		})
	}
}

func TestE2EBridgeElicitationDeclinedWithoutCapability(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, bridgeFixtureArgs...)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+cmpOr(version, "latest"), func(t *testing.T) {
			c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{}, version)
			res, err := c.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "mcp__fx__ask", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			text := resultText(res)
			if !strings.Contains(text, `"action":"decline"`) || !strings.Contains(text, "did not declare the elicitation capability") {
				t.Errorf("the server got %q, want a decline saying the client cannot be asked", text)
			}
		})
	}
}

func TestE2EBridgeSampling(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, bridgeFixtureArgs...)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+cmpOr(version, "latest"), func(t *testing.T) {
			c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "model says: " + prompt}}, nil
				},
			}, version)
			res, err := c.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "mcp__fx__sample", Arguments: map[string]any{"prompt": "hello"}})
			if err != nil || res.IsError {
				t.Fatalf("sample: %+v (%s), %v", res, resultText(res), err)
			}
			if text := resultText(res); !strings.Contains(text, "model says: hello") || !strings.Contains(text, "test-model") {
				t.Errorf("the server got %q, want the client's model's answer", text)
			}
		})
	}
	t.Run("no capability", func(t *testing.T) {
		c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{}, "2025-11-25")
		res, err := c.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "mcp__fx__sample", Arguments: map[string]any{"prompt": "hello"}})
		if err != nil {
			t.Fatal(err)
		}
		if text := resultText(res); !res.IsError || !strings.Contains(text, "did not declare the sampling capability") {
			t.Errorf("sample without the capability = %q (isError %v), want an error saying why", text, res.IsError)
		}
	})
}

// TestE2EInspectorBridge: the MCP Inspector CLI reads a resource and gets a
// prompt through the gateway, over stdio and over HTTP.
func TestE2EInspectorBridge(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, bridgeFixtureArgs...)
	check := func(t *testing.T, server []string) {
		out, err := inspector(t, slices.Concat(server, []string{"--method", "resources/read", "--uri", "fixture://doc/003"})...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "the text of fixture://doc/003") {
			t.Errorf("resources/read through the inspector = %s, want the fixture's text", out)
		}
		out, err = inspector(t, slices.Concat(server, []string{"--method", "prompts/get", "--prompt-name", "mcp__fx__echo", "--prompt-args", "text=ab", "times=2"})...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "abab") {
			t.Errorf("prompts/get through the inspector = %s, want the message abab", out)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		check(t, []string{"-e", "DSH_HOME=" + e.home, bin, "serve", "--stdio", "-c", e.composition})
	})
	t.Run("http", func(t *testing.T) {
		p := e.serveHTTPProc(t, bin, nil)
		check(t, []string{p.url, "--transport", "http"})
	})
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestE2EBridgeServerEverything: npm's server-everything through the
// gateway to a go-sdk client (2026-07-28): a resource, a prompt with
// arguments, completion, and the server's elicitation and sampling
// requests (it sends them as 2025-11-25 requests) answered by the client.
func TestE2EBridgeServerEverything(t *testing.T) {
	bin := dshHostBinary(t)
	node, argv := mcptest.NodeServer(t, mcptest.ServerEverything, "stdio")
	e := newE2E(t)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	yaml := fmt.Sprintf(`plugins:
  - id: everything
    name: mcp-client
    config:
      serverName: everything
      transport: stdio
      command: %q
      args: [%s]
`, node, strings.Join(quoted, ", "))
	if err := os.WriteFile(e.composition, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c := connectBridge(t, e.transport(t, bin, "stdio"), mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e-model", Content: &mcp.TextContent{Text: "sampled through the gateway"}}, nil
		},
	}, "")
	ctx := ctxT(t)

	const doc = "demo://resource/static/document/architecture.md"
	read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].MIMEType != "text/markdown" || !strings.Contains(read.Contents[0].Text, "#") {
		t.Errorf("resources/read %s = %+v, %v; want the markdown document", doc, read, err)
	}
	got, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__everything__args-prompt", Arguments: map[string]string{"city": "Paris"}})
	if err != nil || len(got.Messages) == 0 || !strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, "Paris") {
		t.Errorf("prompts/get args-prompt = %+v, %v; want the weather question for Paris", got, err)
	}
	comp, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__everything__completable-prompt"}, Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"}})
	if err != nil || !slices.Contains(comp.Completion.Values, "Engineering") {
		t.Errorf("complete department=E = %+v, %v; want Engineering", comp, err)
	}

	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__trigger-elicitation-request", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "Ada Lovelace") {
		t.Errorf("trigger-elicitation-request = %s (%+v), %v; want the client's answer back", resultText(res), res, err)
	}
	res, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__trigger-sampling-request", Arguments: map[string]any{"prompt": "hi"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "sampled through the gateway") {
		t.Errorf("trigger-sampling-request = %s (%+v), %v; want the client's model's answer", resultText(res), res, err)
	}
}

// TestE2EBridgeRawNames: under serve --raw, prompts go by the server's own
// names, for listing, getting and completing.
func TestE2EBridgeRawNames(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	e.writeBridge(t, bridgeFixtureArgs...)
	cmd := exec.Command(bin, "serve", "--stdio", "--raw", "-c", e.composition)
	cmd.Env = e.env()
	c := connectBridge(t, &mcp.CommandTransport{Command: cmd}, mcp.ClientOptions{}, "")
	ctx := ctxT(t)
	var prompts []string
	for p, err := range c.cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	slices.Sort(prompts)
	if !slices.Equal(prompts, []string{"echo", "picture"}) {
		t.Errorf("prompts/list under --raw = %v, want the server's own names [echo picture]", prompts)
	}
	got, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "echo", Arguments: map[string]string{"text": "r"}})
	if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "r" {
		t.Errorf("prompts/get echo under --raw = %+v, %v", got, err)
	}
	comp, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "echo"}, Argument: mcp.CompleteParamsArgument{Name: "text", Value: "b"}})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"ref/prompt:text:beta"}) {
		t.Errorf("complete under --raw = %+v, %v", comp, err)
	}
}
