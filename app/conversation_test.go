package app_test

// Each chat front end talks in a conversation of its own (ChatInfo's
// handle), on a host in this process and over the control socket alike.

import (
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/elicit"
)

// frontEnds are two front ends of e's host: over the socket two clients
// each with a connection of its own, in this process the one App the
// host's front ends share (as the control socket's server does).
func frontEnds(t *testing.T, e *env) (app.App, app.App) {
	t.Helper()
	if e.Kill == nil {
		return e.App, e.App
	}
	c, err := control.Dial(t.Context(), e.File)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return e.App, c
}

// userLines is what the person said in request i to the model.
func userLines(t *testing.T, model *openaitest.Server, i int) []string {
	t.Helper()
	reqs := model.Requests()
	if len(reqs) <= i {
		t.Fatalf("%d requests to the model, want more than %d", len(reqs), i)
	}
	msgs, err := reqs[i].Messages()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Role == "user" {
			out = append(out, m.Text())
		}
	}
	return out
}

// TestFrontEndsTalkInTheirOwnConversations: a second front end's new
// conversation does not reset the first one's; each request the model
// gets carries that front end's messages only; /new in one leaves the
// other as it was.
func TestFrontEndsTalkInTheirOwnConversations(t *testing.T) {
	var turns []openaitest.Turn
	for _, s := range []string{"A1", "B1", "A2", "B3", "A3"} {
		turns = append(turns, openaitest.Turn{Content: s})
	}
	model := openaitest.New(t, slices.Repeat(turns, 2)...)
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx := t.Context()
		first := len(model.Requests())
		fa, fb := frontEnds(t, e)
		say := func(f app.App, conv, text, want string) {
			t.Helper()
			res, err := f.Chat(ctx, app.ChatRequest{Text: text, Conversation: conv})
			if err != nil || res.Answer != want {
				t.Fatalf("%q: %+v, %v; want the answer %q", text, res, err, want)
			}
		}
		a, err := fa.ChatSession(ctx, app.ChatSessionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if b, err := hex.DecodeString(a.Conversation); err != nil || len(b) != 16 {
			t.Errorf("handle %q: want 128 bits in hex", a.Conversation)
		}
		say(fa, a.Conversation, "hello from A", "A1")
		b, err := fb.ChatSession(ctx, app.ChatSessionRequest{})
		if err != nil || b.Conversation == a.Conversation || b.Conversation == "" {
			t.Fatalf("the second front end's handle %q (the first's %q), %v", b.Conversation, a.Conversation, err)
		}
		say(fb, b.Conversation, "hello from B", "B1")
		say(fa, a.Conversation, "again from A", "A2")
		if got := userLines(t, model, first+1); !slices.Equal(got, []string{"hello from B"}) {
			t.Errorf("B's first request carries %q", got)
		}
		if got := userLines(t, model, first+2); !slices.Equal(got, []string{"hello from A", "again from A"}) {
			t.Errorf("A's second request carries %q; want A's lines only, none reset", got)
		}
		if r, err := fb.Command(ctx, app.CommandRequest{Line: "/new", Conversation: b.Conversation}); err != nil || r.Error {
			t.Fatalf("/new in B: %+v, %v", r, err)
		}
		say(fb, b.Conversation, "fresh B", "B3")
		say(fa, a.Conversation, "third from A", "A3")
		if got := userLines(t, model, first+3); !slices.Equal(got, []string{"fresh B"}) {
			t.Errorf("B's request after its /new carries %q", got)
		}
		if got := userLines(t, model, first+4); !slices.Equal(got, []string{"hello from A", "again from A", "third from A"}) {
			t.Errorf("A's request after B's /new carries %q; want A's whole conversation", got)
		}
	})
}

// TestSessionApprovalIsTheFrontEnds: what a person approved "for this
// session" in one front end's conversation is asked again in another's.
func TestSessionApprovalIsTheFrontEnds(t *testing.T) {
	count := openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "mcp__fx__count", Arguments: `{}`}}}
	done := openaitest.Turn{Content: "Counted."}
	model := openaitest.New(t, slices.Repeat([]openaitest.Turn{count, done}, 6)...)
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx := t.Context()
		fa, fb := frontEnds(t, e)
		a, err := fa.ChatSession(ctx, app.ChatSessionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := fb.ChatSession(ctx, app.ChatSessionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		asked := func(f app.App, conv string) int {
			t.Helper()
			ans := &answerWith{res: elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: elicit.ApproveSession}}}
			res, err := f.Chat(ctx, app.ChatRequest{Text: "count", Conversation: conv, Answer: ans})
			if err != nil || res.Answer != "Counted." {
				t.Fatalf("turn: %+v, %v", res, err)
			}
			return ans.count()
		}
		if n := asked(fa, a.Conversation); n != 1 {
			t.Fatalf("A's first count was asked %d times, want once", n)
		}
		if n := asked(fa, a.Conversation); n != 0 {
			t.Errorf("A was asked again (%d) after its session approval", n)
		}
		if n := asked(fb, b.Conversation); n != 1 {
			t.Errorf("B was asked %d times, want once: A's session approval is A's", n)
		}
	})
}

// TestUnknownConversation: a handle the host never gave is
// ErrNoConversation for every request that names it, over the socket
// too; nothing falls back to another front end's conversation.
func TestUnknownConversation(t *testing.T) {
	model := openaitest.New(t, openaitest.Turn{Content: "main"}, openaitest.Turn{Content: "main"})
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx := t.Context()
		const nope = "00112233445566778899aabbccddeeff"
		before := len(model.Requests())
		want := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, app.ErrNoConversation) {
				t.Errorf("%s of an unknown conversation: %v; want ErrNoConversation", what, err)
			}
		}
		_, err := e.Chat(ctx, app.ChatRequest{Text: "hi", Conversation: nope})
		want("a turn", err)
		_, err = e.ChatCompact(ctx, app.ChatCompactRequest{Conversation: nope})
		want("compact", err)
		_, err = e.ChatSessions(ctx, app.ChatSessionsRequest{Conversation: nope})
		want("the sessions", err)
		_, err = e.ChatSession(ctx, app.ChatSessionRequest{Conversation: nope})
		want("a new session", err)
		_, err = e.Command(ctx, app.CommandRequest{Line: "/new", Conversation: nope})
		want("/new", err)
		if n := len(model.Requests()) - before; n != 0 {
			t.Errorf("%d requests reached the model", n)
		}
		// The main conversation is there for a front end without a
		// handle, and a command without one runs as before.
		if res, err := e.Chat(ctx, app.ChatRequest{Text: "hi"}); err != nil || res.Answer != "main" {
			t.Errorf("the main conversation: %+v, %v", res, err)
		}
		if r, err := e.Command(ctx, app.CommandRequest{Line: "/new"}); err != nil || r.Error {
			t.Errorf("/new without a handle: %+v, %v", r, err)
		}
	})
}

// TestConversationsAreBounded: past 32 handles the one used least
// recently is dropped (ErrNoConversation); one used since is kept.
func TestConversationsAreBounded(t *testing.T) {
	model := openaitest.New(t)
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx := t.Context()
		var ids []string
		for range 32 {
			info, err := e.ChatSession(ctx, app.ChatSessionRequest{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, info.Conversation)
		}
		// The first is used again: the second is now the least recent.
		if _, err := e.ChatSessions(ctx, app.ChatSessionsRequest{Conversation: ids[0]}); err != nil {
			t.Fatal(err)
		}
		last, err := e.ChatSession(ctx, app.ChatSessionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range append(ids, last.Conversation) {
			_, err := e.ChatSessions(ctx, app.ChatSessionsRequest{Conversation: id})
			if dropped := errors.Is(err, app.ErrNoConversation); dropped != (i == 1) {
				t.Errorf("handle %d: %v; want only handle 1 dropped", i, err)
			}
		}
	})
}

// TestConversationAfterARestart: a restart of the agent drops the
// conversations; each front end's next turn says so (Restarted, its
// event first) and starts anew, in its own conversation still.
func TestConversationAfterARestart(t *testing.T) {
	var turns []openaitest.Turn
	for _, s := range []string{"A1", "B1", "A2", "B2", "A3", "C1"} {
		turns = append(turns, openaitest.Turn{Content: s})
	}
	model := openaitest.New(t, slices.Repeat(turns, 2)...)
	both(t, fixtureComposition(t, model), func(t *testing.T, e *env) {
		ctx := t.Context()
		first := len(model.Requests())
		fa, fb := frontEnds(t, e)
		var a, b, c app.ChatInfo
		for _, h := range []*app.ChatInfo{&a, &b, &c} {
			info, err := fa.ChatSession(ctx, app.ChatSessionRequest{})
			if err != nil {
				t.Fatal(err)
			}
			*h = info
		}
		say := func(f app.App, conv, text, want string, restarted bool) {
			t.Helper()
			var kinds []string
			res, err := f.Chat(ctx, app.ChatRequest{Text: text, Conversation: conv, Events: func(ev app.ChatEvent) { kinds = append(kinds, ev.Kind) }})
			if err != nil || res.Answer != want || res.Restarted != restarted || restarted && (len(kinds) == 0 || kinds[0] != app.ChatRestarted) {
				t.Fatalf("%q: %+v, %v, events %q; want %q, restarted %v", text, res, err, kinds, want, restarted)
			}
		}
		say(fa, a.Conversation, "one from A", "A1", false)
		say(fb, b.Conversation, "one from B", "B1", false)
		text, err := os.ReadFile(e.File)
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(text), "apiKeyEnv: APP_TEST_KEY", "apiKeyEnv: APP_TEST_KEY\n      maxSteps: 7", 1)
		if err := os.WriteFile(e.File, []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		if res, err := e.Reload(ctx); err != nil || res.Error != "" {
			t.Fatalf("reload: %+v, %v", res, err)
		}
		// A console's slash line that names no prompt runs nothing, and
		// leaves the news to the turn.
		if res, err := fa.Chat(ctx, app.ChatRequest{Text: "/nope x", Conversation: a.Conversation, PromptOnly: true}); err != nil || !res.NotPrompt || res.Restarted {
			t.Errorf("a prompt-only line naming no prompt: %+v, %v", res, err)
		}
		say(fa, a.Conversation, "two from A", "A2", true)
		say(fb, b.Conversation, "two from B", "B2", true)
		say(fa, a.Conversation, "three from A", "A3", false)
		if got := userLines(t, model, first+3); !slices.Equal(got, []string{"two from B"}) {
			t.Errorf("B's request after the restart carries %q", got)
		}
		if got := userLines(t, model, first+4); !slices.Equal(got, []string{"two from A", "three from A"}) {
			t.Errorf("A's request after the restart carries %q", got)
		}
		// A front end that starts anew after the restart (its /resume)
		// is not told of it at its next turn.
		if _, err := fa.ChatSession(ctx, app.ChatSessionRequest{Conversation: c.Conversation}); err != nil {
			t.Fatal(err)
		}
		say(fa, c.Conversation, "one from C", "C1", false)
	})
}
