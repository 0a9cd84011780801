package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// bigTool registers "big", whose answer is size bytes of text.
func bigTool(t *testing.T, reg *tools.Registry, size int) {
	big := strings.Repeat("x", size)
	register(t, reg, tools.Definition{Name: "big", InputSchema: []byte(`{"type":"object"}`),
		Execute: func(context.Context, tools.Call) (tools.Output, error) {
			return tools.Output{Value: big, Content: []tools.Content{tools.Text(big)}}, nil
		}})
}

// TestHeldAnswersBudget: the answers held for clients that do not read
// them are bounded over the whole listener (maxHeldAnswerBytes): while a
// never-reading client holds a large answer, another client's large
// answer that would pass the budget is replaced by a JSON-RPC error
// naming the key, a small answer still passes, and once the held answer
// is let go a large one passes again.
func TestHeldAnswersBudget(t *testing.T) {
	const size = 12 << 20 // more than loopback's socket buffers take
	reg := tools.New(nil)
	bigTool(t, reg, size)
	register(t, reg, echo("echo"))
	// No write timeout that could let the held answer go while the test
	// still counts on it: the test lets it go itself, closing the client.
	l := serveLimited(t, reg, Config{Limits: Limits{MaxHeldAnswerBytes: size + size/2}}, serveOptions{write: time.Hour})
	status, id, _ := openSession(t, l.url)
	if status != http.StatusOK {
		t.Fatalf("initialize: %d", status)
	}
	rawPost(t, l.url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// A client that asks for the big answer and never reads it.
	c := l.dial(t)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{}}}`
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
		l.addr, id, len(call), call)
	mcptest.WaitFor(t, 2*wait, "the never-read answer to be held", func() bool {
		b := l.g.answers.Load()
		return b != nil && b.held.Load() > size
	})

	status, body := rawPost(t, l.url, id, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
	if status != http.StatusOK || !strings.Contains(body, `"id":3`) || !strings.Contains(body, "maxHeldAnswerBytes") || len(body) > 4096 {
		t.Errorf("a big answer past the budget: %d, %d bytes %.300q, want a JSON-RPC error for id 3 naming maxHeldAnswerBytes", status, len(body), body)
	}
	status, body = rawPost(t, l.url, id, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"small"}}}`)
	if status != http.StatusOK || !strings.Contains(body, "small") || strings.Contains(body, `"error"`) {
		t.Errorf("a small answer: %d %.300q, want it answered", status, body)
	}

	c.Close()
	mcptest.WaitFor(t, 2*wait, "the held answer to be let go", func() bool { return l.g.answers.Load().held.Load() == 0 })
	status, body = rawPost(t, l.url, id, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
	if status != http.StatusOK || len(body) < size || strings.Contains(body[:min(len(body), 200)], `"error"`) {
		t.Errorf("a big answer once the budget is free: %d, %d bytes, want it whole", status, len(body))
	}
}

// TestAnswerPastWholeBudget: an answer larger than maxHeldAnswerBytes on
// its own, on an idle gateway, is refused saying so and naming the key,
// not with "retry later", which could never succeed.
func TestAnswerPastWholeBudget(t *testing.T) {
	const budget = 256 << 10
	reg := tools.New(nil)
	bigTool(t, reg, 2*budget)
	l := serveLimited(t, reg, Config{Limits: Limits{MaxHeldAnswerBytes: budget}}, serveOptions{})
	status, id, _ := openSession(t, l.url)
	if status != http.StatusOK {
		t.Fatalf("initialize: %d", status)
	}
	rawPost(t, l.url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	status, body := rawPost(t, l.url, id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
	if status != http.StatusOK || !strings.Contains(body, `"id":2`) || !strings.Contains(body, "maxHeldAnswerBytes") ||
		!strings.Contains(body, "larger on its own") || strings.Contains(body, "retry later") {
		t.Errorf("an answer past the whole budget: %d %.400q, want an error for id 2 saying it is larger than maxHeldAnswerBytes on its own", status, body)
	}
}

// TestAnswerBudgetValidate: maxHeldAnswerBytes is refused negative or
// below one write's chunk, naming the key.
func TestAnswerBudgetValidate(t *testing.T) {
	for _, v := range []int64{-1, 1000} {
		l := Limits{MaxHeldAnswerBytes: v}
		if err := l.Validate(); err == nil || !strings.Contains(err.Error(), "maxHeldAnswerBytes") {
			t.Errorf("maxHeldAnswerBytes %d: %v, want an error naming it", v, err)
		}
	}
	l := Limits{MaxHeldAnswerBytes: 256 << 20}
	if err := l.Validate(); err != nil {
		t.Errorf("256 MiB: %v", err)
	}
}
