package agent

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

const mcpFixtureArgs = `, -resources, "2", -prompts, -sample`

// An @server:uri mention attaches the resource's text to the message the
// model gets; a mention of an unknown server stays text.
func TestResourceMention(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "read it"})
	e := startWith(t, srv, mcpFixtureArgs, "")
	text := "Summarise @demo:fixture://doc/001. and ask me@example.org or @nobody:x://y"
	var o output
	if _, err := e.agent.Main().Turn(context.Background(), text, o.out()); err != nil {
		t.Fatalf("turn: %v\n%s", err, o.status.String())
	}
	msgs := messages(t, srv, 0)
	got := msgs[len(msgs)-1]
	want := text + "\n\n[Attached @demo:fixture://doc/001]\nResource fixture://doc/001 (text/plain):\nthe text of fixture://doc/001"
	if got.Role != "user" || got.Text() != want {
		t.Errorf("user message = %q\nwant %q", got.Text(), want)
	}
	// A mention that cannot be read fails the turn, naming it; nothing
	// is sent.
	_, err := e.agent.Main().Turn(context.Background(), "see @demo:fixture://nope", o.out())
	if err == nil || !strings.Contains(err.Error(), "@demo:fixture://nope") {
		t.Errorf("an unreadable mention: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// /mcp__demo__echo inserts the prompt's message as the user's turn, which
// the model answers; a prompt that ends with the assistant's message is
// kept without a request.
func TestPromptInsertedAsTurns(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "heard you"}, openaitest.Turn{Content: "next"})
	e := startWith(t, srv, mcpFixtureArgs, "")
	ctx := context.Background()
	if !e.agent.IsPrompt("mcp__demo__echo") || e.agent.IsPrompt("mcp__demo__nope") {
		t.Fatal("IsPrompt does not know the fixture's prompts")
	}
	var o output
	res, err := e.agent.Main().Prompt(ctx, "mcp__demo__echo", "text=hi times=2", o.out())
	if err != nil || res.Answer != "heard you" {
		t.Fatalf("prompt: %+v, %v\n%s", res, err, o.status.String())
	}
	msgs := messages(t, srv, 0)
	if last := msgs[len(msgs)-1]; last.Role != "user" || last.Text() != "hihi" {
		t.Errorf("the prompt's message = %s, want the user's hihi", last.Raw)
	}
	if _, err := e.agent.Main().Prompt(ctx, "mcp__demo__picture", "", o.out()); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("a prompt ending with the assistant's message made a request (%d requests)", n)
	}
	if _, err := e.agent.Main().Turn(ctx, "go on", o.out()); err != nil {
		t.Fatal(err)
	}
	var roles []string
	msgs = messages(t, srv, 1)
	for _, m := range msgs[1:] {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,user,assistant,user" {
		t.Fatalf("roles = %v", roles)
	}
	if u, a := msgs[3], msgs[4]; !strings.HasPrefix(u.Text(), "Look at this:\n\n") || !strings.Contains(u.Text(), "image") || !strings.Contains(a.Text(), "a note") {
		t.Errorf("picture's messages: %s %s", u.Raw, a.Raw)
	}
	// A missing required argument is the command's usage error.
	if _, err := e.agent.Main().Prompt(ctx, "mcp__demo__echo", "", o.out()); err == nil || !strings.Contains(err.Error(), "missing required") {
		t.Errorf("echo without text: %v", err)
	}
}

// The fixture's sample tool asks the client's model: the person approves,
// and the scripted model's answer goes back to the server.
func TestSamplingAnsweredByModel(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_s", "mcp_call", `{"tool":"mcp__demo__sample","arguments":{"prompt":"Say pong"}}`)}},
		openaitest.Turn{Content: "pong from the model"},
		openaitest.Turn{Content: "the server got pong"},
	)
	e := startWith(t, srv, mcpFixtureArgs, "")
	svc, _ := host.Lookup(e.h, elicit.Key)
	var mu sync.Mutex
	var asked []elicit.Request
	remove := svc.Install(elicit.AnswerFunc(func(_ context.Context, req elicit.Request) (elicit.Result, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: elicit.ApproveOnce}}, nil
	}))
	defer remove()
	var o output
	res, err := e.agent.Main().Turn(context.Background(), "sample", o.out())
	if err != nil || res.Answer != "the server got pong" {
		t.Fatalf("turn: %+v %v\n%s", res, err, o.status.String())
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].Approval == nil || !strings.Contains(asked[0].Approval.Tool, "the MCP server demo") || asked[0].Server != "demo" || !strings.Contains(string(asked[0].Approval.Args), "Say pong") {
		t.Errorf("asked = %+v", asked)
	}
	mu.Unlock()
	reqs := srv.Requests()
	sm := messages(t, srv, 1)
	if reqs[1].Field("tools") != nil || len(sm) != 1 || sm[0].Role != "user" || sm[0].Text() != "Say pong" || string(reqs[1].Field("max_tokens")) != "50" {
		t.Errorf("sampling request = %s", reqs[1].Body)
	}
	msgs := messages(t, srv, 2)
	if tool := msgs[len(msgs)-1]; tool.Role != "tool" || !strings.Contains(tool.Text(), "pong from the model") {
		t.Errorf("the tool result = %s", tool.Raw)
	}
}

// Under a one-shot chat without --yes a sampling request is declined with
// the reason, and the model is not asked; with --yes it is answered.
func TestSamplingOneShot(t *testing.T) {
	for _, yes := range []bool{false, true} {
		t.Run(map[bool]string{false: "without --yes", true: "with --yes"}[yes], func(t *testing.T) {
			turns := []openaitest.Turn{{ToolCalls: []openaitest.ToolCall{call("call_s", "mcp_call", `{"tool":"mcp__demo__sample","arguments":{"prompt":"Say pong"}}`)}}}
			if yes {
				turns = append(turns, openaitest.Turn{Content: "pong"})
			}
			turns = append(turns, openaitest.Turn{Content: "done"})
			srv := openaitest.New(t, turns...)
			e := startWith(t, srv, mcpFixtureArgs, "")
			var o output
			out := o.out()
			out.OneShot = &tools.OneShot{Yes: yes}
			if _, err := e.agent.NewConversation().Turn(context.Background(), "sample", out); err != nil {
				t.Fatalf("turn: %v\n%s", err, o.status.String())
			}
			reqs := srv.Requests()
			msgs := messages(t, srv, len(reqs)-1)
			tool := msgs[len(msgs)-1].Text()
			if yes {
				if len(reqs) != 3 || !strings.Contains(tool, "pong") {
					t.Errorf("%d requests; tool result %q", len(reqs), tool)
				}
				return
			}
			if len(reqs) != 2 || !strings.Contains(tool, "pass --yes") {
				t.Errorf("%d requests; tool result %q, want the decline's reason", len(reqs), tool)
			}
		})
	}
}
