package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// askTool is a tool that asks its caller's answerer, as mcp-client does for
// a server's elicitation, and answers with what became of it.
func askTool(name, mode string) tools.Definition {
	return tools.Definition{
		Name:        name,
		Description: "Ask the client.",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			req := elicit.Request{Server: "srv", Mode: mode, Message: "Your name?"}
			if mode == elicit.ModeURL {
				req.URL, req.ElicitationID = "https://example.com/x", "e-1"
			} else {
				req.Schema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
				form, err := elicit.ParseForm(req.Schema)
				if err != nil {
					return tools.Output{}, err
				}
				req.Form = form
			}
			// The call's answerer, as mcp-client asks.
			res := elicit.New().AskFor(ctx, call.Channels.CallerAnswerer(), req)
			text := res.Action + " " + res.Reason
			if n, ok := res.Content["name"].(string); ok {
				text += " name=" + n
			}
			return tools.Output{Value: text, Content: []tools.Content{tools.Text(text)}}, nil
		},
	}
}

func connectWith(t *testing.T, g *Gateway, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "forward-test", Version: "0"}, opts).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func askText(t *testing.T, cs *mcp.ClientSession, name string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return resultText(res)
}

// TestForwardElicitation: the gateway passes a tool's question to the
// calling client in both protocol styles, several rounds in one call, and
// declines with the reason for what the client did not declare.
func TestForwardElicitation(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, askTool("ask_form", elicit.ModeForm))
	register(t, reg, askTool("ask_url", elicit.ModeURL))
	register(t, reg, tools.Definition{Name: "ask_twice", Description: "Ask twice.", Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
		a, _ := askTool("", elicit.ModeForm).Execute(ctx, call)
		b, _ := askTool("", elicit.ModeURL).Execute(ctx, call)
		text := a.Value.(string) + " | " + b.Value.(string)
		return tools.Output{Value: text, Content: []tools.Content{tools.Text(text)}}, nil
	}})
	h := newHarness(t, reg, nil)

	formOnly := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	}
	both := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bo"}}, nil
		},
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cs := connectWith(t, h.g, formOnly, version)
			if got := askText(t, cs, "ask_form"); got != "accept  name=Ada" {
				t.Errorf("ask_form = %q, want the client's accepted answer", got)
			}
			if got := askText(t, cs, "ask_url"); !strings.HasPrefix(got, "decline ") || !strings.Contains(got, "did not declare URL-mode elicitation") {
				t.Errorf("ask_url to a form-only client = %q, want a decline saying why", got)
			}
			cs = connectWith(t, h.g, both, version)
			if got := askText(t, cs, "ask_twice"); got != "accept  name=Bo | decline " {
				t.Errorf("ask_twice = %q, want both rounds answered by the client", got)
			}
			cs = connectWith(t, h.g, nil, version)
			if got := askText(t, cs, "ask_form"); !strings.Contains(got, "did not declare the elicitation capability") {
				t.Errorf("ask_form to a client without elicitation = %q, want a decline saying why", got)
			}
		})
	}
}

// TestForwardUnknownRequestState: a retry naming a state the gateway does
// not hold is refused, and parked calls end with the gateway.
func TestForwardUnknownRequestState(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, askTool("ask_form", elicit.ModeForm))
	h := newHarness(t, reg, nil)
	cs := connectWith(t, h.g, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not used: the test answers by hand")
		}}, "2026-07-28")
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_form", Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("first round = %+v, %v; want input_required with one question and a state", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_form", Arguments: map[string]any{}, RequestState: "forged",
		InputResponses: mcp.InputResponseMap{inputKey: &mcp.ElicitResult{Action: "accept"}}}); err == nil || !strings.Contains(err.Error(), "requestState is unknown or expired") {
		t.Errorf("a retry with a forged state: err = %v, want it refused", err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_form", Arguments: map[string]any{}, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{inputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Cy"}}}})
	if err != nil || resultText(res) != "accept  name=Cy" {
		t.Errorf("the retry with the state = %+v (%s), %v; want the call resumed with the answer", res, resultText(res), err)
	}
	// One more parked call, left for the gateway's close to end.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_form", Arguments: map[string]any{}}); err != nil || !res.NeedsInput() {
		t.Fatalf("another first round = %+v, %v", res, err)
	}
}

// TestForwardDuringPromptAndRead: a server that asks during prompts/get or
// resources/read reaches the client too, in both protocol styles.
func TestForwardDuringPromptAndRead(t *testing.T) {
	// The provider asks as mcp-client does: the request's answerer, from
	// the channels the gateway handed the resources service.
	ask := func(ctx context.Context, ch *tools.Channels) string {
		out, _ := askTool("", elicit.ModeForm).Execute(ctx, tools.Call{Channels: ch})
		return out.Value.(string)
	}
	res := resources.New(nil)
	src, err := res.Register(scope(t), resources.Provider{
		Server: "srv",
		Read: func(ctx context.Context, uri string, ch *tools.Channels) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: ask(ctx, ch)}}}, nil
		},
		GetPrompt: func(ctx context.Context, name string, _ map[string]string, ch *tools.Channels) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: ask(ctx, ch)}}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	src.Set([]*mcp.Resource{{URI: "srv://a", Name: "a"}}, nil)
	src.SetPrompts([]resources.Prompt{{Public: "mcp__srv__p", Prompt: mcp.Prompt{Name: "p"}}})
	src.Listed()
	g, err := New(scope(t), tools.New(nil), nil, &Deps{Resources: res, Debounce: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Di"}}, nil
		},
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cs := connectWith(t, g, opts, version)
			ctx := context.Background()
			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "srv://a"})
			if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "accept  name=Di" {
				t.Errorf("resources/read = %+v, %v; want the read resumed with the client's answer", read, err)
			}
			got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__srv__p"})
			if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "accept  name=Di" {
				t.Errorf("prompts/get = %+v, %v; want the get resumed with the client's answer", got, err)
			}
		})
	}
}

// BenchmarkForwardingCall: a trivial tools/call through the gateway in
// memory from a 2026-07-28 client that declared elicitation (each call runs
// as a possible round trip) and from one that did not (direct). Compare the
// two sub-benchmarks of one run.
func BenchmarkForwardingCall(b *testing.B) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "bench", nil)
	defer s.Dispose(time.Second)
	if _, err := reg.Register(s, echo("echo")); err != nil {
		b.Fatal(err)
	}
	g, err := New(s, reg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts *mcp.ClientOptions
	}{
		{"direct", nil},
		{"round-trip-capable", &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := g.Server().Connect(context.Background(), st, nil)
			if err != nil {
				b.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, tc.opts).Connect(context.Background(), ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { cs.Close(); ss.Wait() }()
			b.ResetTimer()
			for b.Loop() {
				// Params of its own for every call, as a client sends
				// them: go-sdk fills a 2026-07-28 request's _meta in
				// place, and reused params would skip that work.
				params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}
				if _, err := cs.CallTool(context.Background(), params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
