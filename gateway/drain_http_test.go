package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestDrainAnswersARequestTheListenerAdmitted: a POST the listener took
// before the drain began is answered, even when its JSON-RPC request
// reaches the gateway after: the drain waits for it, and a load balancer
// could not retry an error inside a 200 elsewhere. (Its body arrives
// after the drain's start here; behind HAProxy, replicas under load lost
// such calls with "the gateway is draining".)
func TestDrainAnswersARequestTheListenerAdmitted(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("echo"))
	g, err := New(scope(t), reg, &Config{Stateless: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.HTTPHandler(""))
	defer srv.Close()

	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still answered"}}}`
	body, send := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	type answer struct {
		status int
		text   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(data), err}
	}()
	if _, err := io.WriteString(send, call[:20]); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, 30*time.Second, "the listener to take the POST", func() bool { return g.posts.count() == 1 })

	drained := make(chan int, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		drained <- g.Drain(ctx)
	}()
	mcptest.WaitFor(t, 30*time.Second, "the drain to begin", g.Draining)
	if _, err := io.WriteString(send, call[20:]); err != nil {
		t.Fatal(err)
	}
	send.Close()

	a := <-answered
	if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.text, "still answered") || strings.Contains(a.text, `"error"`) {
		t.Errorf("the admitted call: %d %q (%v), want 200 with its answer", a.status, a.text, a.err)
	}
	if left := <-drained; left != 0 {
		t.Errorf("Drain left %d requests, want 0", left)
	}
}
