package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

var okSchema = map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}

// stubbornAskTool asks with elicitation/create (2025-11-25) on a context
// the call's cancellation does not reach, as a server that never
// withdraws its question would, and answers with what came back.
func stubbornAskTool() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(context.WithoutCancel(ctx), &mcp.ElicitParams{Message: "Still there?", RequestedSchema: okSchema})
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res)
		return textResult(string(b)), nil
	}
}

var rev20251125 = &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}}

// With two calls in flight a 2025-11-25 question names neither: both
// silence timers wait while the person answers, and the installed answerer
// is asked.
func TestAmbiguousElicitationHoldsEveryCall(t *testing.T) {
	srv := newFakeServer(t, rev20251125)
	srv.addTool("ask", stubbornAskTool())
	busyIn, free := make(chan struct{}), make(chan struct{})
	srv.addTool("busy", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(busyIn)
		select {
		case <-free:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textResult("free"), nil
	})
	e := startWithSlowPerson(t, "amb", srv)

	busy := make(chan tools.Result, 1)
	go func() { busy <- e.call(tools.Caller{}, "mcp__amb__busy", "{}") }()
	<-busyIn
	res := e.call(tools.Caller{}, "mcp__amb__ask", "{}")
	if res.Err != nil || resultText(res) != `{"action":"accept","content":{"ok":true}}` {
		t.Errorf("the asking call, with another in flight: %v %q", res.Err, resultText(res))
	}
	close(free)
	if res := <-busy; res.Err != nil || resultText(res) != "free" {
		t.Errorf("the other call, silent while the person answered: %v %q", res.Err, resultText(res))
	}
}

// A question ends with its call: the caller's cancellation reaches the
// answerer even when the server does not withdraw the question.
func TestElicitationEndsWithItsCall(t *testing.T) {
	srv := newFakeServer(t, rev20251125)
	srv.addTool("ask", stubbornAskTool())
	e := mustStart(t, testConfig("end"), srv, withElicit(elicit.New()))

	asked, ended, testOver := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(testOver)
	answer := elicit.AnswerFunc(func(ctx context.Context, _ elicit.Request) (elicit.Result, error) {
		close(asked)
		select {
		case <-ctx.Done():
			close(ended)
		case <-testOver:
		}
		return elicit.Result{Action: elicit.Cancel}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan tools.Result, 1)
	go func() {
		done <- e.reg.Run(ctx, tools.Call{Name: "mcp__end__ask", Args: []byte("{}"), Channels: &tools.Channels{Answerer: answer}})
	}()
	<-asked
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the question stayed open after its call was cancelled")
	}
	<-done
}

// A server that asks in the middle of a call the 2025-11-25 way reaches
// the answerer with protocolVersion 2025-11-25, and without any pin (the
// host reconnects it on 2025-11-25 and, the tool being read-only, sends
// the call again, revision.go); pinned to 2026-07-28 by
// the user, go-sdk refuses to send its request, and the call fails.
func TestProtocolVersionPinsTheRevision(t *testing.T) {
	for _, tc := range []struct {
		pin      string
		answered bool
	}{{"", true}, {"2025-11-25", true}, {"2026-07-28", false}} {
		srv := newFakeServer(t, nil)
		srv.addReadOnlyTool("ask", stubbornAskTool())
		svc := elicit.New()
		cfg := testConfig("pin")
		cfg.ProtocolVersion = tc.pin
		e := mustStart(t, cfg, srv, withElicit(svc))
		restore := svc.Install(elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) {
			return elicit.Result{Action: elicit.Accept, Content: map[string]any{"ok": true}}, nil
		}))
		res := e.call(tools.Caller{}, "mcp__pin__ask", "{}")
		restore()
		answered := res.Err == nil && resultText(res) == `{"action":"accept","content":{"ok":true}}`
		if answered != tc.answered {
			t.Errorf("protocolVersion %q: answered %v, want %v (%v %q)", tc.pin, answered, tc.answered, res.Err, resultText(res))
		}
	}
}

// A go-sdk server that asks its client during a call the 2025-11-25 way
// (ServerSession.Elicit) refuses itself to send the question once
// 2026-07-28 is negotiated. Without a pin the host reconnects it on
// 2025-11-25 and, the tool being read-only, sends the call again, once
// (TestE2EAskingTheOldWayRepeatsOnlyWhatIsSafe has the tools that are
// not sent again): the calls are answered, the
// server was connected twice, and the log says so once. With the user's
// own pin on 2026-07-28 the host leaves the pin alone and the log says,
// once, which key makes it work.
func TestOldStyleQuestionSwitchesTheRevision(t *testing.T) {
	srv := newFakeServer(t, nil)
	var revisions []string
	srv.addReadOnlyTool("asks", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		revisions = append(revisions, req.Session.InitializeParams().ProtocolVersion)
		_, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
		if err != nil {
			return nil, err
		}
		return textResult("asked"), nil
	})
	e := mustStart(t, testConfig("old"), srv, withElicit(elicit.New()))
	for i := range 2 {
		if res := e.call(tools.Caller{}, "mcp__old__asks", "{}"); res.Err != nil {
			t.Fatalf("call %d: %v", i+1, res.Err)
		}
	}
	if diff := cmp.Diff([]string{"2026-07-28", "2025-11-25", "2025-11-25"}, revisions); diff != "" {
		t.Errorf("revisions the tool ran on (-want +got):\n%s", diff)
	}
	if n := srv.attempts.Load(); n != 2 {
		t.Errorf("connected %d times, want 2 (one switch)", n)
	}
	const note = "reconnecting it on 2025-11-25"
	if n := len(e.logs.Find(slog.LevelWarn, note)); n != 1 {
		t.Errorf("the switch was logged %d times, want once:\n%s", n, e.logs.Dump())
	}

	cfg := testConfig("pinned")
	cfg.ProtocolVersion = "2026-07-28"
	pinned := mustStart(t, cfg, srv, withElicit(elicit.New()))
	for range 2 {
		res := pinned.call(tools.Caller{}, "mcp__pinned__asks", "{}")
		if res.Err == nil || !strings.Contains(res.Err.Error(), "cannot be sent while serving a request") {
			t.Errorf("pinned to 2026-07-28: %v, want the server's refusal", res.Err)
		}
	}
	const hint = `set protocolVersion: "2025-11-25" in this entry's config`
	if n := len(pinned.logs.Find(slog.LevelWarn, hint)); n != 1 {
		t.Errorf("the hint was logged %d times, want once:\n%s", n, pinned.logs.Dump())
	}
	if pinned.logs.Has(slog.LevelWarn, note) {
		t.Error("an entry that pins protocolVersion was switched")
	}
}

// roots: the server's roots/list gets the entry's roots, absolute paths
// and file:// URIs alike; a call whose caller has roots (the gateway's
// client) gets the caller's instead.
func TestRootsFromTheEntryOrTheCaller(t *testing.T) {
	srv := newFakeServer(t, nil)
	srv.addTool("roots", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 roots stay functional through their deprecation window.
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return textResult(strings.Join(uris, " ")), nil
	})
	cfg := testConfig("rt")
	// The 2025-11-25 way: go-sdk servers send roots/list themselves only
	// on it.
	cfg.ProtocolVersion = "2025-11-25"
	cfg.Roots = []string{"/srv/project", "file:///home/me/notes"}
	e := mustStart(t, cfg, srv)
	if res := e.call(tools.Caller{}, "mcp__rt__roots", "{}"); res.Err != nil || resultText(res) != "file:///home/me/notes file:///srv/project" {
		t.Errorf("roots of the entry: %v %q", res.Err, resultText(res))
	}
	ch := &tools.Channels{Roots: func(context.Context) ([]*mcp.Root, error) {
		return []*mcp.Root{{URI: "file:///client/dir"}}, nil
	}}
	if res := e.reg.Run(context.Background(), tools.Call{Name: "mcp__rt__roots", Args: []byte("{}"), Channels: ch}); res.Err != nil || resultText(res) != "file:///client/dir" {
		t.Errorf("roots of the caller: %v %q", res.Err, resultText(res))
	}
}

// inFlightSwitch is a server whose tool asks asks the 2025-11-25 way and
// whose tool busy runs until free is closed, started under name with an
// elicitation that accepts, and busy's call already running: the setup of
// the tests of a switch of revision while a call is in flight.
type inFlightSwitch struct {
	srv   *fakeServer
	e     *testEnv
	asked *atomic.Int32
	free  chan struct{}
	busy  chan tools.Result
}

func startInFlightSwitch(t *testing.T, name string, hints *mcp.ToolAnnotations) *inFlightSwitch {
	t.Helper()
	sw := &inFlightSwitch{srv: newFakeServer(t, nil), asked: new(atomic.Int32), free: make(chan struct{}), busy: make(chan tools.Result, 1)}
	sw.srv.addToolHints("asks", hints, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sw.asked.Add(1)
		if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: okSchema}); err != nil {
			return nil, err
		}
		return textResult("asked"), nil
	})
	busyIn := make(chan struct{})
	sw.srv.addTool("busy", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(busyIn)
		select {
		case <-sw.free:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textResult("free"), nil
	})
	svc := elicit.New()
	// The default close timeout: a switch that did not wait for busy is
	// seen by its log (checkNotSwitched), not by a close that times out,
	// which a loaded machine could reach after busy ends too.
	sw.e = mustStart(t, testConfig(name), sw.srv, withElicit(svc))
	t.Cleanup(svc.Install(elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) {
		return elicit.Result{Action: elicit.Accept, Content: map[string]any{"ok": true}}, nil
	})))
	go func() { sw.busy <- sw.e.call(tools.Caller{}, "mcp__"+name+"__busy", "{}") }()
	<-busyIn
	return sw
}

// checkNotSwitched fails the test if the switch began while busy is held
// (it logs as it begins): go-sdk's Close waits for busy, and meanwhile
// the supervisor would be stuck, or give the server up at the close
// timeout.
func (sw *inFlightSwitch) checkNotSwitched(t *testing.T) {
	t.Helper()
	if sw.e.logs.Has(slog.LevelWarn, "reconnecting it on 2025-11-25") {
		t.Error("the switch began while a call was in flight")
	}
}

// The switch to 2025-11-25 waits for the calls still running on the
// connection: a long call in flight when another asks the old way is
// answered, not cut, and the asking call is answered after it.
func TestRevisionSwitchWaitsForCallsInFlight(t *testing.T) {
	sw := startInFlightSwitch(t, "wait", &mcp.ToolAnnotations{ReadOnlyHint: true})
	asks := make(chan tools.Result, 1)
	go func() { asks <- sw.e.call(tools.Caller{}, "mcp__wait__asks", "{}") }()
	// The server refused to ask; the switch waits for busy.
	eventually(t, "the first, refused, ask", func() bool { return sw.asked.Load() == 1 })
	// Not a timed assertion: time for a switch that did not wait to go
	// wrong.
	time.Sleep(400 * time.Millisecond)
	sw.checkNotSwitched(t)
	close(sw.free)
	if res := <-sw.busy; res.Err != nil || resultText(res) != "free" {
		t.Errorf("the call in flight: %v %q, want it answered", res.Err, resultText(res))
	}
	if res := <-asks; res.Err != nil || resultText(res) != "asked" {
		t.Errorf("the asking call: %v %q, want it answered after the switch", res.Err, resultText(res))
	}
	if n := sw.srv.attempts.Load(); n != 2 {
		t.Errorf("connected %d times, want 2", n)
	}
}

// A tool not safe to repeat, refused while another call runs: its call
// fails at once, saying it was not sent again; the call in flight is not
// cut; the caller's next call (made before or after that one ends) is
// answered on 2025-11-25.
func TestRevisionSwitchNotRepeatedWhileCallsInFlight(t *testing.T) {
	sw := startInFlightSwitch(t, "nr", nil)
	if res := sw.e.call(tools.Caller{}, "mcp__nr__asks", "{}"); res.Err == nil || !strings.Contains(res.Err.Error(), "not sent again") {
		t.Errorf("the refused call: %v %q, want it failed, not sent again", res.Err, resultText(res))
	}
	again := make(chan tools.Result, 1)
	go func() { again <- sw.e.call(tools.Caller{}, "mcp__nr__asks", "{}") }()
	// Not a timed assertion: time for a switch that did not wait to go
	// wrong.
	time.Sleep(400 * time.Millisecond)
	sw.checkNotSwitched(t)
	close(sw.free)
	if res := <-sw.busy; res.Err != nil || resultText(res) != "free" {
		t.Errorf("the call in flight: %v %q, want it answered", res.Err, resultText(res))
	}
	if res := <-again; res.Err != nil || resultText(res) != "asked" {
		t.Errorf("the next call: %v %q, want it answered after the switch", res.Err, resultText(res))
	}
	if n := sw.asked.Load(); n != 2 {
		t.Errorf("the asking tool ran %d times, want 2 (one per call)", n)
	}
	if n := sw.srv.attempts.Load(); n != 2 {
		t.Errorf("connected %d times, want 2", n)
	}
}

// A server whose calls fail with go-sdk's refusal whatever the revision
// (a hostile one, or one that refuses for another reason) is switched
// once: the first call of its read-only tool is sent again once, later
// calls then fail with that refusal, and are neither sent again nor
// reconnect the server again.
func TestRevisionSwitchIsTriedOnce(t *testing.T) {
	srv := newFakeServer(t, nil)
	var ran atomic.Int32
	srv.addReadOnlyTool("asks", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		return nil, errors.New(`"elicitation/create" cannot be sent while serving a request on protocol version 2026-07-28`)
	})
	e := mustStart(t, testConfig("once"), srv, withElicit(elicit.New()))
	for i := range 3 {
		res := e.call(tools.Caller{}, "mcp__once__asks", "{}")
		if res.Err == nil || !strings.Contains(res.Err.Error(), "cannot be sent while serving a request") {
			t.Errorf("call %d: %v, want the server's refusal", i+1, res.Err)
		}
	}
	if n := srv.attempts.Load(); n != 2 {
		t.Errorf("connected %d times, want 2 (one switch)", n)
	}
	if n := ran.Load(); n != 4 {
		t.Errorf("the tool ran %d times for 3 calls, want 4 (the first sent again once)", n)
	}
}
