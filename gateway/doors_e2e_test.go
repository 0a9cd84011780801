package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
)

// The doors of a server: its tools (through mcp_call), resources, a read
// through its template's URI, its prompts, completion of either, a
// subscription, and the served meta-tools mcp_resources and mcp_read.

// doorsComposition is fx (tools only), sx (tools, resources, a template,
// prompts, completion) under mcp-fold, the policy rules given, and extra.
func doorsComposition(e *e2e, rules, extra string) string {
	return e.fixtureEntry() + fmt.Sprintf(`  - id: secret
    name: mcp-client
    config:
      serverName: sx
      transport: stdio
      command: %q
      args: ["-cancel-file", %q, "-resources", "2", "-prompts", "-complete"]
      sandbox: {write: [%q]}
  - id: fold
    name: mcp-fold
    config: {}
  - id: policy
    name: policy
    config:
      rules:
%s%s`, e.fixture, e.cancelFile, e.events, rules, extra)
}

// closedErr reports whether err is the gate's refusal.
func closedErr(err error) bool { return err != nil && strings.Contains(err.Error(), "closed to you") }

// doorsClient connects a go-sdk client to url (with token when not "")
// and waits until sx is listed: mcp_resources is served once a server
// offers resources, and mcp_read then reaches sx (read or refused).
func doorsClient(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}
	if token != "" {
		tr.HTTPClient = bearerClient(t, token)
	} else {
		h := &http.Transport{}
		t.Cleanup(h.CloseIdleConnections)
		tr.HTTPClient = &http.Client{Transport: h}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "doors", Version: "0"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	waitFor(t, "sx's resources and prompts behind the gateway", func() bool {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "mcp_read", Arguments: map[string]any{"uri": "fixture://doc/001"}})
		if err != nil || (res.IsError && !strings.Contains(fmt.Sprint(mcptest.Texts(res)), "closed to you")) {
			return false
		}
		// The prompts come in their own list, after the resources.
		_, err = cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "mcp__sx__echo", Arguments: map[string]string{"text": "x"}})
		return err == nil || !strings.Contains(err.Error(), "unknown prompt")
	})
	return cs
}

// doors is what one caller reaches of sx.
type doors struct {
	listsResources, listsTemplates, listsPrompts   bool
	reads, readsByTemplate, getsPrompt             bool
	completesPrompt, completesTemplate, subscribes bool
	metaLists, metaReads, metaReadsTemplate        bool
	calls                                          bool // mcp_call mcp__sx__greet
}

// reach tries each door of sx; refusals must be the gate's.
func reach(t *testing.T, cs *mcp.ClientSession) doors {
	t.Helper()
	ctx := t.Context()
	var d doors
	open := func(door string, err error) bool {
		if err != nil && !closedErr(err) {
			t.Errorf("%s: %v, want it served or refused by the gate", door, err)
		}
		return err == nil
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.listsResources = slices.ContainsFunc(rl.Resources, func(r *mcp.Resource) bool { return r.URI == "fixture://doc/001" })
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.listsTemplates = slices.ContainsFunc(tl.ResourceTemplates, func(r *mcp.ResourceTemplate) bool { return r.URITemplate == "fixture://doc/{n}" })
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.listsPrompts = slices.ContainsFunc(pl.Prompts, func(p *mcp.Prompt) bool { return p.Name == "mcp__sx__echo" })

	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://doc/001"})
	d.reads = open("resources/read fixture://doc/001", err)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://doc/42"})
	d.readsByTemplate = open("resources/read fixture://doc/42 (the template's)", err)
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__sx__echo", Arguments: map[string]string{"text": "hi"}})
	d.getsPrompt = open("prompts/get mcp__sx__echo", err)
	_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__sx__echo"}, Argument: mcp.CompleteParamsArgument{Name: "text", Value: "al"}})
	d.completesPrompt = open("completion of mcp__sx__echo", err)
	_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "fixture://doc/{n}"}, Argument: mcp.CompleteParamsArgument{Name: "n", Value: "b"}})
	d.completesTemplate = open("completion of fixture://doc/{n}", err)
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fixture://doc/002"})
	d.subscribes = open("resources/subscribe fixture://doc/002", err)

	meta := func(name string, args map[string]any) (string, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return fmt.Sprint(mcptest.Texts(res)), !res.IsError
	}
	text, _ := meta("mcp_resources", map[string]any{})
	d.metaLists = strings.Contains(text, "fixture://doc/001") || strings.Contains(text, "fixture://doc/{n}")
	if text, ok := meta("mcp_resources", map[string]any{"server": "sx"}); ok != d.metaLists || (!ok && !strings.Contains(text, "closed to you")) {
		t.Errorf("mcp_resources {server: sx} = %q (ok %v), want it to agree with the unfiltered listing (%v)", text, ok, d.metaLists)
	}
	text, d.metaReads = meta("mcp_read", map[string]any{"uri": "fixture://doc/001"})
	if !d.metaReads && !strings.Contains(text, "closed to you") {
		t.Errorf("mcp_read fixture://doc/001 = %q, want the text or the gate's refusal", text)
	}
	if text, ok := meta("mcp_read", map[string]any{"uri": "fixture://doc/001", "server": "sx"}); ok != d.metaReads {
		t.Errorf("mcp_read fixture://doc/001 naming server sx = %q (ok %v), want it to agree with the routed read (%v)", text, ok, d.metaReads)
	}
	text, d.metaReadsTemplate = meta("mcp_read", map[string]any{"template": "fixture://doc/{n}", "arguments": map[string]any{"n": "7"}})
	if !d.metaReadsTemplate && !strings.Contains(text, "closed to you") {
		t.Errorf("mcp_read of the template = %q, want the text or the gate's refusal", text)
	}
	_, d.calls = meta("mcp_call", map[string]any{"tool": "mcp__sx__greet", "arguments": map[string]any{"name": "x"}})
	return d
}

var (
	allOpen = doors{true, true, true, true, true, true, true, true, true, true, true, true, true}
	// resourcesClosed: sx's tools and prompts open, its resources not.
	resourcesClosed = doors{listsPrompts: true, getsPrompt: true, completesPrompt: true, calls: true}
)

// TestE2EOneGateForEveryDoor: without auth, a server whose every tool the
// policy denies is closed on every door: lists, a read (through its
// template's URI too), its prompts, completion, subscription, and the
// meta-tools mcp_resources, mcp_read and mcp_call. A rule's kinds say
// which doors it closes: `kinds: [resources]` leaves the tools and
// prompts open, `kinds: [tools]` the resources and prompts.
func TestE2EOneGateForEveryDoor(t *testing.T) {
	bin := dshHostBinary(t)
	cases := []struct {
		name  string
		rules string
		want  doors
	}{
		{"every tool denied", `        - tools: [mcp__sx__*]
          action: deny
`, doors{}},
		{"server denied", `        - servers: [sx]
          action: deny
`, doors{}},
		{"resources only", `        - servers: [sx]
          kinds: [resources]
          action: deny
`, resourcesClosed},
		{"tools only", `        - servers: [sx]
          kinds: [tools]
          action: deny
`, func() doors { d := allOpen; d.calls = false; return d }()},
		{"resources allowed before a deny", `        - servers: [sx]
          kinds: [resources, prompts]
          action: allow
        - servers: [sx]
          action: deny
`, func() doors { d := allOpen; d.calls = false; return d }()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t)
			writeFile(t, e.composition, doorsComposition(e, tc.rules, ""))
			p := e.serveHTTPProc(t, bin, nil)
			cs := doorsClient(t, p.url, "")
			if got := reach(t, cs); got != tc.want {
				t.Errorf("sx's doors:\n got %+v\nwant %+v", got, tc.want)
			}
			// fx stays open through mcp_call.
			if res := callTool(t, cs, "mcp_call", map[string]any{"tool": "mcp__fx__greet", "arguments": map[string]any{"name": "x"}}); res.IsError {
				t.Errorf("mcp_call mcp__fx__greet: %q", mcptest.Texts(res))
			}
		})
	}
}

// TestE2EOneGateWithAuth: with inbound OAuth, sx is the admins' only:
// bob (devs) is refused every door of it, a read through its template's
// URI, completion, subscription and the meta-tools included; alice
// (admins) reaches them all.
func TestE2EOneGateWithAuth(t *testing.T) {
	checkOAuthDoors(t, `        - servers: [sx]
          when: '"admins" in caller.groups'
          action: allow
        - servers: [sx]
          action: deny
`, doorsCaller{"bob", []string{"devs"}, doors{}}, doorsCaller{"alice", []string{"admins"}, allOpen})
}

// doorsCaller is a token's subject and groups and what it should reach of sx.
type doorsCaller struct {
	name   string
	groups []string
	want   doors
}

// checkOAuthDoors serves the doors composition with rules behind inbound
// OAuth, then checks what each caller's token reaches of sx.
func checkOAuthDoors(t *testing.T, rules string, callers ...doorsCaller) {
	t.Helper()
	bin := dshHostBinary(t)
	e := newE2E(t)
	addr := freeLoopbackAddr(t)
	gwURL := "http://" + addr + "/mcp"
	as := oauthtest.Start(t, oauthtest.Options{JWT: true, Resource: gwURL})
	writeFile(t, e.composition, doorsComposition(e, rules, fmt.Sprintf(`  - id: gateway
    name: gateway
    config:
      http: %q
      auth:
        issuer: %q
        audience: %q
`, addr, as.Issuer, gwURL)))
	e.serveHTTPProc(t, bin, nil)
	for _, who := range callers {
		t.Run(who.name, func(t *testing.T) {
			cs := doorsClient(t, gwURL, as.Sign(as.Claims(who.name, who.groups)))
			if got := reach(t, cs); got != who.want {
				t.Errorf("%s reaches of sx:\n got %+v\nwant %+v", who.name, got, who.want)
			}
		})
	}
}
