package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// consoleAskComposition runs the fixture with a policy that asks before shout,
// waiting askTimeout for the console.
func consoleAskComposition(t *testing.T, askTimeout string) string {
	t.Helper()
	return writeComposition(t, fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q}
  - id: policy
    name: policy
    config:
      askTimeout: %s
      rules:
        - tools: ["mcp__fx__shout"]
          action: ask
`, mcptest.FixtureBinary(t), askTimeout))
}

// askHome sets DSH_HOME, for this process (the console) and the hosts it
// starts, to a new directory short enough for a socket path.
func askHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("", "dsha")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	return home
}

// serveStdio starts the built binary's serve --stdio on file, as an agent
// CLI does, and connects to it; the process ends with the test.
func serveStdio(t *testing.T, ctx context.Context, file string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--stdio", "--log-level", "error", "-c", file)
	cmd.Dir = filepath.Dir(file)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent-cli", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type shouted struct {
	text string // the result's text, or the error's
	err  bool   // a tool error or a protocol error
	took time.Duration
}

// shout calls the asked tool through cs in the background.
func shout(ctx context.Context, cs *mcp.ClientSession, text string) <-chan shouted {
	ch := make(chan shouted, 1)
	go func() {
		begin := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__shout", Arguments: map[string]any{"text": text}})
		out := shouted{took: time.Since(begin)}
		switch {
		case err != nil:
			out.text, out.err = err.Error(), true
		default:
			out.err = res.IsError
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					out.text += tc.Text
				}
			}
		}
		ch <- out
	}()
	return ch
}

func got(t *testing.T, ch <-chan shouted) shouted {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(time.Minute):
		t.Fatal("the call did not end within a minute")
	}
	return shouted{}
}

func nextAsk(t *testing.T, events <-chan askbroker.Event) askbroker.Ask {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.Ask != nil {
				return *ev.Ask
			}
		case <-time.After(time.Minute):
			t.Fatal("no ask reached the console within a minute")
		}
	}
}

// TestServeAsksReachTheConsole: two serve --stdio processes of one
// composition (two agent CLIs) put their asks to the one console; the
// console's once returns the tool's result to one, its deny the policy's
// error to the other; a peer answering on the broker's socket is refused;
// the trail says the console answered.
func TestServeAsksReachTheConsole(t *testing.T) {
	home := askHome(t)
	file := consoleAskComposition(t, "10m") // past the test's bound: no timer races its answers
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := serveStdio(t, ctx, file), serveStdio(t, ctx, file)

	broker, err := askbroker.Listen(file)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	events := broker.Subscribe(ctx)

	fromA := shout(ctx, a, "from a")
	askA := nextAsk(t, events)
	fromB := shout(ctx, b, "from b")
	askB := nextAsk(t, events)
	if askA.PID == askB.PID || askA.PID == 0 {
		t.Errorf("the asks come from pids %d and %d, want two processes", askA.PID, askB.PID)
	}
	for _, ask := range []askbroker.Ask{askA, askB} {
		if ask.Tool != "mcp__fx__shout" || ask.Server != "fx" || !strings.HasPrefix(ask.Caller, "gateway") ||
			!strings.Contains(ask.Rule, "rule 1") || !strings.Contains(string(ask.Arguments), `"from `) {
			t.Errorf("the console sees %+v", ask)
		}
	}

	// A peer on the socket cannot answer.
	path, _ := askbroker.SocketPath(file)
	peer, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peer.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(peer, `{"answer":{"id":%q,"answer":"once"}}`+"\n", askA.ID)
	if line, _ := bufio.NewReader(peer).ReadString('\n'); !strings.Contains(line, "refused") {
		t.Errorf("a peer's answer: %q, want refused", line)
	}
	if n := len(broker.Pending()); n != 2 {
		t.Errorf("%d asks open after the peer's answer, want both", n)
	}

	if err := broker.Answer(askA.ID, askbroker.Once); err != nil {
		t.Fatal(err)
	}
	if err := broker.Answer(askB.ID, askbroker.Deny); err != nil {
		t.Fatal(err)
	}
	if r := got(t, fromA); r.err || r.text != "FROM A" {
		t.Errorf("approved once: %+v, want the tool's FROM A", r)
	}
	if r := got(t, fromB); !r.err || !strings.Contains(r.text, "denied by policy rule 1") || !strings.Contains(r.text, "denied at the console") {
		t.Errorf("denied: %+v, want the policy's error", r)
	}
	// Once is once: the next call is asked again.
	again := shout(ctx, a, "again")
	if ask := nextAsk(t, events); ask.PID != askA.PID {
		t.Errorf("the next call is asked by pid %d, want %d", ask.PID, askA.PID)
	}
	broker.Close() // the console goes away mid-ask
	if r := got(t, again); !r.err || !strings.Contains(r.text, "the console closed") {
		t.Errorf("the console closed mid-ask: %+v, want the policy's error", r)
	}

	answers := trailAnswers(t, home)
	for _, want := range []string{"console once", "console deny", "console none"} {
		if !strings.Contains(answers, want) {
			t.Errorf("the trail's answers %q lack %q", answers, want)
		}
	}
}

// trailAnswers returns the answer of every record of the audit trail.
func trailAnswers(t *testing.T, home string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(home, "audit", "*"))
	var answers []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			var rec struct {
				Answer string `json:"answer"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Answer != "" {
				answers = append(answers, rec.Answer)
			}
		}
	}
	return strings.Join(answers, ", ")
}

// TestServeAsksWithNoConsole: with no console attached, both processes'
// asks are denied at once, as before there were consoles (an askTimeout
// of an hour would hold them past the test's bound).
func TestServeAsksWithNoConsole(t *testing.T) {
	askHome(t)
	file := consoleAskComposition(t, "1h")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, cs := range []*mcp.ClientSession{serveStdio(t, ctx, file), serveStdio(t, ctx, file)} {
		if r := got(t, shout(ctx, cs, "x")); !r.err || !strings.Contains(r.text, "denied by policy rule 1") || !strings.Contains(r.text, "did not declare the elicitation capability") || !strings.Contains(r.text, "no web console is attached") {
			t.Errorf("no console: %+v, want the denial", r)
		}
	}
}

// TestServeAskTimesOut: a console that never answers: the call is denied
// after the entry's askTimeout.
func TestServeAskTimesOut(t *testing.T) {
	askHome(t)
	file := consoleAskComposition(t, "300ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := serveStdio(t, ctx, file)
	broker, err := askbroker.Listen(file)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	if r := got(t, shout(ctx, cs, "x")); !r.err || !strings.Contains(r.text, "no answer within 300ms") {
		t.Errorf("unanswered: %+v, want denied after askTimeout", r)
	}
	if p := broker.Pending(); len(p) != 0 {
		t.Errorf("still open at the console: %+v", p)
	}
}

// TestCallAsksTheConsole: `call` without --yes puts its ask to the
// console where one is attached (approved: the tool's result; not
// answered: denied after askTimeout), and is denied at once where none
// is, naming --yes.
func TestCallAsksTheConsole(t *testing.T) {
	askHome(t)
	// The approved call's askTimeout outlasts the test: a short one would
	// race this test's answer on a loaded machine. The unanswered call
	// has a composition (and a console) of its own, with a short one.
	file, short := consoleAskComposition(t, "10m"), consoleAskComposition(t, "2s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := func(file, text string) <-chan shouted {
		ch := make(chan shouted, 1)
		go func() {
			cmd := exec.CommandContext(ctx, binary, "call", "-c", file, "mcp__fx__shout", `{"text":"`+text+`"}`)
			out, err := cmd.CombinedOutput()
			ch <- shouted{text: string(out), err: err != nil}
		}()
		return ch
	}
	if r := got(t, call(file, "none")); !r.err || !strings.Contains(r.text, "pass --yes") {
		t.Errorf("no console: %+v, want the denial naming --yes", r)
	}

	broker, err := askbroker.Listen(file)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	events := broker.Subscribe(ctx)
	approved := call(file, "yes")
	ask := nextAsk(t, events)
	if ask.Caller != "call" || len(ask.Choices) == 0 || ask.Choices[0] != askbroker.Once {
		t.Errorf("the console sees %+v", ask)
	}
	if err := broker.Answer(ask.ID, askbroker.Session); err == nil {
		t.Error("a session approval of a one-shot call was taken")
	}
	if err := broker.Answer(ask.ID, askbroker.Once); err != nil {
		t.Fatal(err)
	}
	if r := got(t, approved); r.err || !strings.Contains(r.text, "YES") {
		t.Errorf("approved: %+v, want YES", r)
	}
	unanswering, err := askbroker.Listen(short)
	if err != nil {
		t.Fatal(err)
	}
	defer unanswering.Close()
	if r := got(t, call(short, "late")); !r.err || !strings.Contains(r.text, "no answer within 2s") {
		t.Errorf("unanswered: %+v, want denied after askTimeout", r)
	}
}
