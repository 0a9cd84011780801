package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

// A window of 4000 tokens compacted at half: the second message passes
// 2000 tokens, so the first turn is summarised before it is sent; the
// request then fits, and a conversation resumed from the session sends
// the compacted history byte for byte.
func TestCompactionAtThreshold(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "Noted.", Usage: &openaitest.Usage{PromptTokens: 1350, CompletionTokens: 2}},
		openaitest.Turn{Content: "The person greeted; the secret word is kumquat.", Usage: &openaitest.Usage{PromptTokens: 120, CompletionTokens: 11}},
		openaitest.Turn{Content: "Noted.", Usage: &openaitest.Usage{PromptTokens: 500, CompletionTokens: 2}},
	)
	e := start(t, srv, "      contextWindow: 4000\n      compactAt: 0.5\n")
	dir := t.TempDir()
	sess, err := sessions.New(dir, "composition.yml", "m")
	if err != nil {
		t.Fatal(err)
	}
	conv := e.agent.NewConversation()
	conv.Record(sess)
	ctx := context.Background()
	var o output
	first := "hello; the secret word is kumquat. " + strings.Repeat("filler ", 400)
	if _, err := conv.Turn(ctx, first, o.out()); err != nil {
		t.Fatal(err)
	}
	long := "Please remember this too: " + strings.Repeat("lorem ipsum ", 250)
	if _, err := conv.Turn(ctx, long, o.out()); err != nil {
		t.Fatalf("turn: %v\n%s", err, o.status.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (turn, summary, turn)", len(reqs))
	}
	// Without compaction the second turn's request would pass 1000.
	if est := estimateFrom(1350, len(reqs[0].Body), len(reqs[0].Body)+len(long)+60); est <= 2000 {
		t.Fatalf("the test's message is too short to pass the threshold: %d", est)
	}
	sum := messages(t, srv, 1)
	if reqs[1].Field("tools") != nil || len(sum) != 2 || sum[0].Role != "system" || sum[1].Role != "user" ||
		!strings.Contains(sum[1].Text(), "hello") || !strings.Contains(sum[1].Text(), "kumquat") || strings.Contains(sum[1].Text(), "lorem") {
		t.Fatalf("summary request = %s", reqs[1].Body)
	}
	next := messages(t, srv, 2)
	roles := []string{}
	for _, m := range next {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" ||
		!strings.HasPrefix(next[1].Text(), summaryHead) || !strings.Contains(next[1].Text(), "secret word is kumquat") ||
		next[3].Text() != long || reqs[2].Field("tools") == nil {
		t.Fatalf("request after compaction: roles %v\n%s", roles, reqs[2].Body)
	}
	if est := estimateFrom(1350, len(reqs[0].Body), len(reqs[2].Body)); est > 2000 {
		t.Errorf("the request after compaction is estimated at %d tokens, over the threshold 2000", est)
	}
	if !strings.Contains(o.status.String(), "earlier messages were summarised") {
		t.Errorf("status = %q", o.status.String())
	}
	// The session holds the compaction: resumed, the conversation sends
	// what the running one sends.
	ls, err := sessions.Open(dir, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	resumed := e.agent.NewConversation()
	if err := resumed.Resume(ls); err != nil {
		t.Fatal(err)
	}
	// The resumed history is the running one's: compare the next request.
	running, _ := conv.snapshot()
	saved, _ := resumed.snapshot()
	a, _ := json.Marshal(running)
	b, _ := json.Marshal(saved)
	if !bytes.Equal(a, b) {
		t.Fatalf("resumed history differs:\nrunning %s\nsaved   %s", a, b)
	}
	srv.Push(openaitest.Turn{Content: "a"}, openaitest.Turn{Content: "a"})
	for _, c := range []*Conversation{conv, resumed} {
		if _, err := c.Turn(ctx, "third", o.out()); err != nil {
			t.Fatal(err)
		}
	}
	reqs = srv.Requests()
	if !bytes.Equal(reqs[3].Body, reqs[4].Body) {
		t.Errorf("the resumed conversation sent\n%s\nthe running one\n%s", reqs[4].Body, reqs[3].Body)
	}
	raw, _ := os.ReadFile(sess.Path)
	if !bytes.Contains(raw, []byte(`"kind":"compact"`)) || !bytes.Contains(raw, []byte(`"replaces":2`)) {
		t.Errorf("no compaction line in the session:\n%s", raw)
	}
}

// /context's parts add up to its total, which is the estimate compaction
// goes by; /compact summarises by hand, keeping the last turn.
func TestContextAndCompactCommands(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "one", Usage: &openaitest.Usage{PromptTokens: 400}},
		openaitest.Turn{Content: "two", Usage: &openaitest.Usage{PromptTokens: 450}},
		openaitest.Turn{Content: "SUMMARY-OF-ONE"},
	)
	e := start(t, srv, "")
	ctx := context.Background()
	var o output
	// Long enough that its summary is smaller (a shorter one is kept:
	// TestCompactKeepsAShortConversation).
	first := "first " + strings.Repeat("filler ", 100)
	for _, m := range []string{first, "second"} {
		if _, err := e.agent.Main().Turn(ctx, m, o.out()); err != nil {
			t.Fatal(err)
		}
	}
	u, err := e.agent.Main().Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.System <= 0 || u.Tools <= 0 || u.History <= 0 || u.Request <= 0 ||
		u.System+u.Tools+u.History+u.Request != u.Total || !u.Measured || u.Messages != 4 {
		t.Fatalf("context = %+v: the parts do not add up to the total", u)
	}
	if want := e.agent.Main().estimate(u.Bytes); u.Total != want || u.Window != 1_000_000 || u.Threshold != 800_000 {
		t.Errorf("context = %+v, want total %d of deepseek-flash's 1000000 at 0.8", u, want)
	}
	cmds, _ := host.Lookup(e.h, commands.Key)
	reply := cmds.Run(ctx, tools.Caller{Kind: tools.CallerConsole}, "/context")
	if reply.Error || !strings.Contains(reply.Text, "system text") || !strings.Contains(reply.Text, "(4 messages)") {
		t.Errorf("/context = %q", reply.Text)
	}
	reply = cmds.Run(ctx, tools.Caller{Kind: tools.CallerConsole}, "/compact")
	if reply.Error || !strings.Contains(reply.Text, "2 messages summarised") {
		t.Fatalf("/compact = %q", reply.Text)
	}
	sum := messages(t, srv, 2)
	if !strings.Contains(sum[1].Text(), "first") || strings.Contains(sum[1].Text(), "second") {
		t.Errorf("the summary request should hold the first turn only: %q", sum[1].Text())
	}
	srv.Push(openaitest.Turn{Content: "three"})
	if _, err := e.agent.Main().Turn(ctx, "third", o.out()); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range messages(t, srv, 3)[1:] {
		texts = append(texts, m.Role+":"+strings.TrimPrefix(m.Text(), summaryHead))
	}
	want := []string{"user:SUMMARY-OF-ONE", "assistant:" + summaryAck, "user:second", "assistant:two", "user:third"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("after /compact the model got\n%q\nwant\n%q", texts, want)
	}
}

// A large tool result is cut in what the model summarises, kept in the
// attachments store, and named by its reference in the summary.
func TestCompactKeepsToolResultsByReference(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_big", "big", `{}`)}},
		openaitest.Turn{Content: "It is long."},
		openaitest.Turn{Content: "ok"},
		openaitest.Turn{Content: "SUMMARY"},
	)
	e := start(t, srv, "")
	big := "BEGIN " + strings.Repeat("0123456789", 500) + " END"
	s := host.NewScope(context.Background(), "big", nil)
	t.Cleanup(func() { s.Dispose(time.Second) })
	if _, err := e.reg.Register(s, tools.Definition{
		Name: "big", Description: "A long text.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: big}, nil },
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conv := e.agent.Main()
	for _, m := range []string{"read big", "and then?"} {
		if _, err := conv.Turn(ctx, m, Output{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, err := conv.Compact(ctx, Output{}); err != nil || n != 4 {
		t.Fatalf("compact: %d messages, %v", n, err)
	}
	transcript := messages(t, srv, 3)[1].Text()
	if !strings.Contains(transcript, "BEGIN") || strings.Contains(transcript, "END") || !strings.Contains(transcript, "more bytes left out") {
		t.Errorf("the transcript should hold the result cut: %q", chatapi.Clip(transcript, 300))
	}
	history, _ := conv.snapshot()
	summary := history[0].OfUser.Content.OfString.Value
	i := strings.Index(summary, "attachment ")
	if i < 0 {
		t.Fatalf("the summary names no attachment: %q", summary)
	}
	id := strings.Fields(summary[i+len("attachment "):])[0]
	id = strings.TrimSuffix(id, ",")
	rc, _, err := e.agent.store.Open(id)
	if err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != big {
		t.Errorf("the attachment holds %d bytes, want the whole result", len(b))
	}
}

// TestCompactKeepsAShortConversation: /compact on a conversation whose
// summary would be larger than what it replaces keeps it as it is and
// says so; the next request carries the turns unchanged.
func TestCompactKeepsAShortConversation(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "one"},
		openaitest.Turn{Content: "two"},
		openaitest.Turn{Content: "The person said first; the assistant answered one."},
		openaitest.Turn{Content: "three"},
	)
	e := start(t, srv, "")
	ctx := context.Background()
	for _, m := range []string{"first", "second"} {
		if _, err := e.agent.Main().Turn(ctx, m, Output{}); err != nil {
			t.Fatal(err)
		}
	}
	cmds, _ := host.Lookup(e.h, commands.Key)
	reply := cmds.Run(ctx, tools.Caller{Kind: tools.CallerConsole}, "/compact")
	if !reply.Error || !strings.Contains(reply.Text, "is not smaller than the 2 messages it would replace") {
		t.Fatalf("/compact = %q (error %v)", reply.Text, reply.Error)
	}
	if _, err := e.agent.Main().Turn(ctx, "third", Output{}); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range messages(t, srv, 3)[1:] {
		texts = append(texts, m.Role+":"+m.Text())
	}
	if got := strings.Join(texts, "|"); got != "user:first|assistant:one|user:second|assistant:two|user:third" {
		t.Errorf("after /compact the model got %q", got)
	}
}
