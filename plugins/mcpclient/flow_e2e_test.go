package mcpclient_test

// End-to-end tests of what a server sends while it works: progress, log
// messages and elicitation, against the real npm server-everything.

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// everythingEntry is server-everything over stdio as instance and
// serverName server, with extra merged into its config.
func (hs *harness) everythingEntry(server string, extra map[string]any) host.Entry {
	hs.t.Helper()
	command, argv := mcptest.NodeServer(hs.t, mcptest.ServerEverything, "stdio")
	hs.exes = append(hs.exes, command)
	cfg := map[string]any{"transport": "stdio", "serverName": server, "command": command, "args": toAny(argv)}
	for k, v := range extra {
		cfg[k] = v
	}
	return host.Entry{ID: server, Name: "mcp-client", Config: cfg}
}

// progressCall runs tool with a progress listener; it returns the result
// and the reports heard.
func (hs *harness) progressCall(tool string, args any) (tools.Result, []tools.Progress) {
	var mu sync.Mutex
	var heard []tools.Progress
	ctx, cancel := context.WithTimeout(hs.t.Context(), e2eWait)
	defer cancel()
	ch := &tools.Channels{Progress: func(p tools.Progress) {
		mu.Lock()
		heard = append(heard, p)
		mu.Unlock()
	}}
	res := hs.callWith(ctx, modelCaller, tool, args, ch)
	mu.Lock()
	defer mu.Unlock()
	return res, heard
}

func TestE2EServerEverythingProgress(t *testing.T) {
	hs := newHarness(t)
	// A 3-second operation in 10 steps 300ms apart, with 1.5s of silence
	// allowed; and the same server with the whole call capped at 2s.
	hs.apply(
		hs.everythingEntry("ev", map[string]any{"toolCallTimeoutMs": 1500}),
		hs.everythingEntry("evmax", map[string]any{"toolCallTimeoutMs": 1500, "toolCallMaxMs": 2000}),
	)
	hs.requireActive("ev")
	hs.requireActive("evmax")
	args := map[string]any{"duration": 3, "steps": 10}

	res, heard := hs.progressCall(mcpclient.PublicToolName("ev", "trigger-long-running-operation"), args)
	if res.Err != nil {
		t.Fatalf("a 3s call with progress every 300ms failed under toolCallTimeoutMs 1500: %v", res.Err)
	}
	if !strings.Contains(text(res), "Long running operation completed") {
		t.Errorf("result: %q", text(res))
	}
	// The last notification may arrive after the result (go-sdk queues
	// notifications but retires a call at once) and is then dropped.
	if len(heard) < 9 || heard[0].Progress != 1 || heard[0].Total != 10 {
		t.Errorf("heard %d reports (%+v), want at least 9, from 1/10", len(heard), heard)
	}
	for i := 1; i < len(heard); i++ {
		if heard[i].Progress <= heard[i-1].Progress {
			t.Errorf("reports out of order: %+v", heard)
			break
		}
	}

	res, heard = hs.progressCall(mcpclient.PublicToolName("evmax", "trigger-long-running-operation"), args)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "did not finish within toolCallMaxMs (2000ms)") {
		t.Errorf("toolCallMaxMs 2000 did not cut a 3s call: %v", res.Err)
	}
	if len(heard) == 0 {
		t.Error("no progress heard before toolCallMaxMs")
	}
}

func TestE2EServerEverythingElicitation(t *testing.T) {
	hs := newHarness(t)
	hs.apply(hs.everythingEntry("ev", nil))
	hs.requireActive("ev")
	form := mcpclient.PublicToolName("ev", "trigger-elicitation-request")
	url := mcpclient.PublicToolName("ev", "trigger-url-elicitation")
	// server-everything offers them only to a client that declares the
	// capability (forms, and URLs separately).
	eventually(t, "the elicitation tools", func() bool {
		names := hs.serverTools("ev")
		return contains(names, form) && contains(names, url)
	})

	if got := text(hs.call(modelCaller, form, nil)); !strings.Contains(got, "User declined") {
		t.Errorf("without an answerer: %q, want a decline", got)
	}

	svc := service(hs, elicit.Key)
	var mu sync.Mutex
	var asked []elicit.Request
	remove := svc.Install(elicit.AnswerFunc(func(_ context.Context, r elicit.Request) (elicit.Result, error) {
		mu.Lock()
		asked = append(asked, r)
		mu.Unlock()
		if r.Mode == elicit.ModeURL {
			return elicit.Result{Action: elicit.Accept}, nil
		}
		return elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
	}))
	defer remove()

	got := text(hs.call(modelCaller, form, nil))
	for _, w := range []string{"User provided the requested information", "Name: Ada Lovelace", "Agreed to terms: true",
		"Favorite Integer: 42", "Favorite Number: 3.14", `"titledSingleSelectEnum": "hero-1"`, `"legacyTitledEnum": "pet-1"`} {
		if !strings.Contains(got, w) {
			t.Errorf("form result lacks %q (the answer, with every default applied):\n%s", w, got)
		}
	}
	got = text(hs.call(modelCaller, url, map[string]any{"url": "https://example.com/consent"}))
	if !strings.Contains(got, "User completed the URL elicitation flow") {
		t.Errorf("URL result: %q", got)
	}
	mu.Lock()
	if len(asked) != 2 || asked[0].Server != "ev" || len(asked[0].Form.Fields) != 13 || asked[1].Mode != elicit.ModeURL || asked[1].URL != "https://example.com/consent" {
		t.Errorf("the answerer was asked %+v", asked)
	}
	asked = nil
	mu.Unlock()

	// The error path: the call is refused with URLElicitationRequired
	// (-32042) naming a page to open first; once it is accepted the call
	// goes again and asks for its own URL.
	got = text(hs.call(modelCaller, url, map[string]any{"url": "https://example.com/second", "errorPath": true}))
	if !strings.Contains(got, "User completed the URL elicitation flow") {
		t.Errorf("URL result after the required page: %q", got)
	}
	mu.Lock()
	if len(asked) != 2 || asked[0].URL != "https://modelcontextprotocol.io" || asked[1].URL != "https://example.com/second" {
		t.Errorf("the answerer was asked %+v, want the required page, then the call's own URL", asked)
	}
	mu.Unlock()
	remove()
	res := hs.call(modelCaller, url, map[string]any{"url": "https://example.com/third", "errorPath": true})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "requires opening https://modelcontextprotocol.io first") {
		t.Errorf("a required page nobody opened: %v", res.Err)
	}
}

func TestE2EServerEverythingLogging(t *testing.T) {
	hs := newHarness(t)
	hs.apply(hs.everythingEntry("ev", nil))
	hs.requireActive("ev")
	toggle := mcpclient.PublicToolName("ev", "toggle-simulated-logging")
	if res := hs.call(modelCaller, toggle, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	// It sends one message at once, of a random level, then one every 5s.
	line := regexp.MustCompile(`level=(\w+) msg="server log" instance=ev severity=(\w+) data="(\w+)[- ]level`)
	var m []string
	eventually(t, "a server log message in the instance's log", func() bool {
		m = line.FindStringSubmatch(hs.logs.String())
		return m != nil
	})
	if res := hs.call(modelCaller, toggle, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := map[string]string{"debug": "DEBUG", "info": "INFO", "notice": "INFO", "warning": "WARN",
		"error": "ERROR", "critical": "ERROR", "alert": "ERROR", "emergency": "ERROR"}
	if got := want[m[2]]; got != m[1] || !strings.EqualFold(m[3], m[2]) {
		t.Errorf("a %s message (%s) was logged at %s, want %s", m[2], m[3], m[1], got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestE2EHTTPStandaloneStream(t *testing.T) {
	// A 2025-11-25 server sends what belongs to no request (here
	// tools/list_changed) on the standalone GET stream, which go-sdk opens
	// after initialize, through the connection's own interface: a wrapper
	// around the connection that hides it loses every such message.
	hs := newHarness(t)
	// Started after the harness, so stopped before its check for processes.
	url := mcptest.StartHTTPFixture(t, "-protocol", "2025-11-25")
	hs.apply(host.Entry{ID: "fx", Name: "mcp-client", Config: map[string]any{
		"transport": "streamable-http", "serverName": "fx", "url": url,
	}})
	hs.requireActive("fx")
	if res := hs.call(modelCaller, mcpclient.PublicToolName("fx", "add-tool"), map[string]any{"name": "late"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	eventually(t, "the tool the server added, after its list_changed", func() bool {
		return contains(hs.serverTools("fx"), mcpclient.PublicToolName("fx", "late"))
	})
}
