package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func call(id, name, args string) openaitest.ToolCall {
	return openaitest.ToolCall{ID: id, Name: name, Arguments: args}
}

func TestFoldedCallThroughMCP(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{
			Reasoning: "The user wants a sum; SECRET-REASONING.",
			Content:   "Let me add.",
			ToolCalls: []openaitest.ToolCall{call("call_1", "mcp_call", `{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}}`)},
			Usage:     &openaitest.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 64},
		},
		openaitest.Turn{Content: "The sum is 3.", Usage: &openaitest.Usage{PromptTokens: 120, CompletionTokens: 5}},
	)
	e := start(t, srv, "      system: Be brief.\n      temperature: 0\n")
	var o output
	res, err := e.agent.Main().Turn(context.Background(), "What is 1+2?", o.out())
	if err != nil {
		t.Fatalf("turn: %v; status:\n%s", err, o.status.String())
	}
	if res.Answer != "The sum is 3." || res.Steps != 1 {
		t.Errorf("result = %+v", res)
	}
	if got := o.text.String(); got != "Let me add.\nThe sum is 3.\n" {
		t.Errorf("streamed text = %q", got)
	}
	if got := o.reasoning.String(); got != "The user wants a sum; SECRET-REASONING.\n" {
		t.Errorf("streamed reasoning = %q", got)
	}
	want := Usage{Prompt: 220, CachedPrompt: 64, Completion: 15, Cached: true}
	if res.Usage.APIMillis = 0; res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}

	// The tools array is the assembly's, byte for byte: folded, so the
	// fixture's tools are behind mcp_list and mcp_call.
	asm, err := e.reg.Assemble(context.Background(), e.agent.Caller())
	if err != nil {
		t.Fatal(err)
	}
	wantTools, _ := asm.ToolsJSON()
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Field("tools"); !bytes.Equal(got, wantTools) {
			t.Errorf("request %d tools:\n%s\nwant the assembly's:\n%s", i, got, wantTools)
		}
		for field, want := range map[string]string{"model": `"deepseek-flash"`, "stream": "true", "temperature": "0", "stream_options": `{"include_usage":true}`} {
			if got := string(r.Field(field)); got != want {
				t.Errorf("request %d %s = %s, want %s", i, field, got, want)
			}
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test-key" {
			t.Errorf("request %d Authorization = %q", i, got)
		}
	}
	if !bytes.Contains(wantTools, []byte(`"mcp_call"`)) || bytes.Contains(wantTools, []byte(`"mcp__demo__add"`)) {
		t.Errorf("the assembly is not folded: %s", wantTools)
	}

	msgs := messages(t, srv, 1)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" {
		t.Fatalf("roles = %v", roles)
	}
	// The system message is the entry's text, then the assembly's
	// sections: the server's instructions.
	if sys := msgs[0].Text(); !strings.HasPrefix(sys, "Be brief.\n\n") || !strings.Contains(sys, "MCP server: demo") || !strings.HasSuffix(sys, "Prefer the add tool for sums.") {
		t.Errorf("system = %q", sys)
	}
	if tc := msgs[2].ToolCalls; len(tc) != 1 || tc[0].ID != "call_1" || tc[0].Function.Name != "mcp_call" {
		t.Errorf("assistant tool calls = %+v", tc)
	}
	if msgs[3].ToolCallID != "call_1" || msgs[3].Text() != "3" {
		t.Errorf("tool message = %s", msgs[3].Raw)
	}
	if bytes.Contains(reqs[1].Body, []byte("SECRET-REASONING")) || bytes.Contains(reqs[1].Body, []byte("reasoning")) {
		t.Errorf("the reasoning was sent back: %s", reqs[1].Body)
	}
	if e.agent.Main().Len() != 4 {
		t.Errorf("history holds %d messages, want 4", e.agent.Main().Len())
	}
}

func TestParallelCallsInOrder(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{
			call("call_a", "wait_b", `{}`),
			call("call_b", "wait_a", `{}`),
			call("call_c", "mcp_call", `{"tool":"mcp__demo__greet","arguments":{"name":"Ada"}}`),
		}},
		openaitest.Turn{Content: "done"},
	)
	e := start(t, srv, "")
	// Each tool waits for the other to have started: run one after the
	// other, the first would wait until the bound and fail.
	a, b := make(chan struct{}), make(chan struct{})
	barrier := func(mine, other chan struct{}, reply string) func(context.Context, struct{}) (any, error) {
		return func(ctx context.Context, _ struct{}) (any, error) {
			close(mine)
			select {
			case <-other:
				return reply, nil
			case <-time.After(20 * time.Second):
				return nil, errors.New("the other call never started: calls ran one after the other")
			}
		}
	}
	s := host.NewScope(context.Background(), "test-tools", nil)
	defer s.Dispose(time.Second)
	for _, d := range []tools.Definition{
		tools.Func("wait_b", "waits for wait_a", barrier(a, b, "from A")),
		tools.Func("wait_a", "waits for wait_b", barrier(b, a, "from B")),
	} {
		if _, err := e.reg.Register(s, d); err != nil {
			t.Fatal(err)
		}
	}
	var o output
	if _, err := e.agent.Main().Turn(context.Background(), "go", o.out()); err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, srv, 1)
	var got []string
	for _, m := range msgs {
		if m.Role == "tool" {
			got = append(got, m.ToolCallID+"="+m.Text())
		}
	}
	want := []string{"call_a=from A", "call_b=from B", "call_c=Hello, Ada!"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool messages = %q, want %q", got, want)
	}
}

func TestImageResult(t *testing.T) {
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "imageInput on", false: "imageInput off"}[on]
		t.Run(name, func(t *testing.T) {
			srv := openaitest.New(t,
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_img", "mcp_call", `{"tool":"mcp__demo__image"}`)}},
				openaitest.Turn{Content: "I see a tiny image."},
			)
			extra := ""
			if on {
				extra = "      imageInput: true\n"
			}
			e := start(t, srv, extra)
			var o output
			if _, err := e.agent.Main().Turn(context.Background(), "show me", o.out()); err != nil {
				t.Fatalf("turn: %v\n%s", err, o.status.String())
			}
			msgs := messages(t, srv, 1)
			tool := msgs[len(msgs)-1]
			if on {
				tool = msgs[len(msgs)-2]
			}
			if tool.Role != "tool" || tool.ToolCallID != "call_img" ||
				!strings.Contains(tool.Text(), "before the image") || !strings.Contains(tool.Text(), "after the image") {
				t.Fatalf("tool message = %s", tool.Raw)
			}
			body := srv.Requests()[1].Body
			hasImage := bytes.Contains(body, []byte(`"image_url"`))
			if on {
				last := msgs[len(msgs)-1]
				if last.Role != "user" || !bytes.Contains(last.Raw, []byte(`"url":"data:image/png;base64,iVBOR`)) {
					t.Errorf("want a user message with the PNG after the tool message, got %s", last.Raw)
				}
			} else {
				if hasImage {
					t.Errorf("an image part was sent with imageInput off: %s", body)
				}
				if !strings.Contains(tool.Text(), "[image") {
					t.Errorf("want a placeholder for the image, got %q", tool.Text())
				}
			}
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_bad", "mcp_call", `{"tool": "mcp__demo__add", `)}},
		openaitest.Turn{Content: "Sorry, let me fix that."},
	)
	e := start(t, srv, "")
	var o output
	res, err := e.agent.Main().Turn(context.Background(), "add", o.out())
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "Sorry, let me fix that." {
		t.Errorf("answer = %q", res.Answer)
	}
	msgs := messages(t, srv, 1)
	tool := msgs[len(msgs)-1]
	if tool.ToolCallID != "call_bad" || !strings.HasPrefix(tool.Text(), "Error: the arguments are not valid JSON") {
		t.Errorf("tool message = %s", tool.Raw)
	}
}

func TestMaxSteps(t *testing.T) {
	ping := openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c", "mcp_call", `{"tool":"mcp__demo__ping"}`)}}
	srv := openaitest.New(t, ping, ping, openaitest.Turn{Content: "finally"})
	e := start(t, srv, "      maxSteps: 2\n")
	var o output
	_, err := e.agent.Main().Turn(context.Background(), "loop", o.out())
	if !errors.Is(err, ErrMaxSteps) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	// The steps stay: the next message goes on from them.
	res, err := e.agent.Main().Turn(context.Background(), "go on", o.out())
	if err != nil || res.Answer != "finally" {
		t.Fatalf("next turn = %+v, %v", res, err)
	}
	if n := len(messages(t, srv, 2)); n != 7 {
		t.Errorf("the next request has %d messages, want 7: system, user, 2 x (assistant, tool), user", n)
	}
}

func TestCancelReachesTheServer(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_slow", "mcp_call", `{"tool":"mcp__demo__slow","arguments":{"ms":60000}}`)}},
		openaitest.Turn{Content: "still here"},
	)
	e := start(t, srv, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.agent.Main().Turn(ctx, "sleep", Output{})
		done <- err
	}()
	waitLine(t, e.events, "slow started")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("turn err = %v, want context.Canceled", err)
	}
	waitLine(t, e.events, "slow cancelled")
	if n := e.agent.Main().Len(); n != 0 {
		t.Errorf("the cancelled turn left %d messages", n)
	}
	res, err := e.agent.Main().Turn(context.Background(), "again", Output{})
	if err != nil || res.Answer != "still here" {
		t.Errorf("the next turn = %+v, %v", res, err)
	}
}

func TestCancelDuringStream(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "thinking hard", Hold: true})
	e := start(t, srv, "")
	ctx, cancel := context.WithCancel(context.Background())
	var o output
	done := make(chan error, 1)
	go func() {
		_, err := e.agent.Main().Turn(ctx, "hi", o.out())
		done <- err
	}()
	mcptest.WaitFor(t, 30*time.Second, "the held answer to stream", func() bool { return strings.Contains(o.text.String(), "thinking hard") })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestKeyIsSecretFromServers(t *testing.T) {
	t.Setenv("AGENT_TEST_VISIBLE", "yes")
	srv := openaitest.New(t)
	e := start(t, srv, "")
	res := e.reg.Execute(context.Background(), tools.Caller{Kind: "test"}, "mcp__demo__env", nil)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	text := res.Content[0].Text
	if strings.Contains(text, testKeyEnv) || strings.Contains(text, "sk-test-key") {
		t.Errorf("the fixture server sees the agent's key:\n%s", text)
	}
	if !strings.Contains(text, "AGENT_TEST_VISIBLE=yes") {
		t.Errorf("the environment looks empty, so the check proves nothing:\n%s", text)
	}
}

func TestConfig(t *testing.T) {
	text := `plugins:
  - id: agent
    name: agent
    config:
      baseUrl: "ftp://x"
      model: " "
      apiKeyEnv: "sk-abc"
      maxSteps: 0
      temperature: 3
      timeoutMs: -1
`
	c, err := host.ParseComposition("composition.yml", []byte(text), nil)
	if err == nil {
		err = host.Check(c)
	}
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"baseUrl", "model", "apiKeyEnv", "maxSteps", "temperature", "timeoutMs"} {
		if !strings.Contains(err.Error(), key+":") {
			t.Errorf("the error does not name %s:\n%v", key, err)
		}
	}
	if strings.Contains(err.Error(), `"sk-abc" is not`) == false {
		t.Errorf("want the bad apiKeyEnv quoted: %v", err)
	}
}

func TestUnsetKeyFailsTheInstance(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	defer h.Shutdown(context.Background())
	c, err := host.ParseComposition("composition.yml", []byte("plugins:\n  - {id: agent, name: agent, config: {apiKeyEnv: AGENT_TEST_UNSET_KEY}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Update(context.Background(), c)
	st := host.Find(h.Status(), "agent")
	if st.State != host.StateFailed || !strings.Contains(st.Err, "AGENT_TEST_UNSET_KEY is not set") {
		t.Errorf("status = %+v", st)
	}
}

func TestCommands(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "one"}, openaitest.Turn{Content: "two"})
	e := start(t, srv, "")
	if _, err := e.agent.Main().Turn(context.Background(), "hi", Output{}); err != nil {
		t.Fatal(err)
	}
	cmds, _ := host.Lookup(e.h, commands.Key)
	// In order: /model shows the model before /model NAME changes it.
	for _, c := range [][2]string{{"/model", "model: deepseek-flash (1M-token context"}, {"/model other-model", "model: other-model"}, {"/new", "new conversation"}} {
		if r := cmds.Run(context.Background(), tools.Caller{Kind: "console"}, c[0]); r.Error || !strings.HasPrefix(r.Text, c[1]) {
			t.Errorf("%s = %+v", c[0], r)
		}
	}
	if _, err := e.agent.Main().Turn(context.Background(), "again", Output{}); err != nil {
		t.Fatal(err)
	}
	req := srv.Requests()[1]
	var body struct{ Model string }
	_ = json.Unmarshal(req.Body, &body)
	if body.Model != "other-model" {
		t.Errorf("model = %q after /model other-model", body.Model)
	}
	if m := messages(t, srv, 1); len(m) != 2 || m[1].Role != "user" || m[1].Text() != "again" {
		t.Errorf("after /new the request has %d messages, want the system message and the new one", len(m))
	}
}

// TestDisposeEndsTheTurn removes the agent entry while a turn waits on a
// slow tool: the turn ends, and the cancellation reaches the server.
func TestDisposeEndsTheTurn(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_slow", "mcp_call", `{"tool":"mcp__demo__slow","arguments":{"ms":60000}}`)}},
	)
	e := start(t, srv, "")
	done := make(chan error, 1)
	go func() {
		_, err := e.agent.Main().Turn(context.Background(), "sleep", Output{})
		done <- err
	}()
	waitLine(t, e.events, "slow started")
	without, _, _ := strings.Cut(e.comp, "  - id: agent\n")
	c, err := host.ParseComposition("composition.yml", []byte(without), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("turn err = %v, want context.Canceled", err)
	}
	waitLine(t, e.events, "slow cancelled")
	if _, ok := host.Lookup(e.h, Key); ok {
		t.Error("the agent service is still provided")
	}
}

// TestProgress: the progress a server reports during a folded call reaches
// Output.Progress, with the name of the tool the model called.
func TestProgress(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_p", "mcp_call", `{"tool":"mcp__demo__progress","arguments":{"steps":3,"ms":20}}`)}},
		openaitest.Turn{Content: "done"},
	)
	e := start(t, srv, "")
	var mu sync.Mutex
	var got []string
	out := Output{Progress: func(tool string, p tools.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %v/%v %s", tool, p.Progress, p.Total, p.Message))
	}}
	if _, err := e.agent.Main().Turn(context.Background(), "go", out); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The MCP client relays the progress sent before the result before it
	// returns the result (calls.Finish), so all three are in; the old
	// "last one races" allowance hid a drop of the last report.
	want := []string{"mcp_call 1/3 step 1 of 3", "mcp_call 2/3 step 2 of 3", "mcp_call 3/3 step 3 of 3"}
	if !slices.Equal(got, want) {
		t.Errorf("progress = %q, want %q", got, want)
	}
}

// TestResetDuringTurn resets the conversation from another goroutine while
// a turn runs (as /new from the control socket does): Reset and Len do not
// wait for the turn, and the turn keeps none of its messages.
func TestResetDuringTurn(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "first"},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_p", "mcp_call", `{"tool":"mcp__demo__ping"}`)}},
		openaitest.Turn{Content: "second"},
	)
	e := start(t, srv, "")
	conv := e.agent.Main()
	if _, err := conv.Turn(context.Background(), "one", Output{}); err != nil || conv.Len() != 2 {
		t.Fatalf("first turn: %v, %d messages", err, conv.Len())
	}
	// The status line of the tool call is written while the turn runs:
	// from there, another goroutine resets the conversation.
	var during int
	status := writerFunc(func(p []byte) {
		if !strings.HasPrefix(string(p), "→") {
			return
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			conv.Reset()
			during = conv.Len()
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a deadlock, not a speed
			t.Error("Reset waited for the running turn")
		}
	})
	res, err := conv.Turn(context.Background(), "two", Output{Status: status})
	if err != nil || res.Answer != "second" {
		t.Fatalf("second turn = %+v, %v", res, err)
	}
	if during != 0 || conv.Len() != 0 {
		t.Errorf("%d messages during the turn, %d after it; want 0: the turn started before /new keeps nothing", during, conv.Len())
	}
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// TestAnsweredImagesAreDropped: an image is sent in the request after its
// tool call, and replaced by a line in every request after that one.
func TestAnsweredImagesAreDropped(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_img", "mcp_call", `{"tool":"mcp__demo__image"}`)}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_p", "mcp_call", `{"tool":"mcp__demo__ping"}`)}},
		openaitest.Turn{Content: "done"},
		openaitest.Turn{Content: "next"},
	)
	e := start(t, srv, "      imageInput: true\n")
	if _, err := e.agent.Main().Turn(context.Background(), "show me", Output{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.agent.Main().Turn(context.Background(), "and now?", Output{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if !bytes.Contains(reqs[1].Body, []byte(`"image_url"`)) {
		t.Errorf("the request after the image's call lacks it: %s", reqs[1].Body)
	}
	for i := 2; i < 4; i++ {
		if bytes.Contains(reqs[i].Body, []byte(`"image_url"`)) || !bytes.Contains(reqs[i].Body, []byte(imageDropped)) {
			t.Errorf("request %d sends the answered image again, or lacks its placeholder: %s", i, reqs[i].Body)
		}
	}
}
