package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestCutAnswersEveryRequest: when a drain outlasts its timeout, Cut
// answers each request still in flight with something a client or a load
// balancer can act on, instead of the empty 200 text/event-stream the
// dispose used to leave: an HTTP call none of whose answer went out gets
// 503 (HAProxy's retry-on 503 sends it to another replica), one whose
// event stream began (a progress notification) gets on it a JSON-RPC
// error saying the gateway is stopping, and so does a call of a stdio-like
// session.
func TestCutAnswersEveryRequest(t *testing.T) {
	reg := tools.New(nil)
	started := make(chan struct{}, 3)
	register(t, reg, tools.Definition{
		Name: "slow",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			if call.Channels.WantsProgress() {
				call.Channels.ReportProgress(tools.Progress{Progress: 1, Message: "begun"})
			}
			started <- struct{}{}
			<-ctx.Done()
			return tools.Output{}, ctx.Err()
		},
	})
	g, err := New(scope(t), reg, &Config{Stateless: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.HTTPHandler(""))
	defer srv.Close()

	type answer struct {
		status        int
		closed        bool // Connection: close
		contentType   string
		body          string
		err           error
		progressSeen  bool
		streamErrored bool
	}
	post := func(body string) <-chan answer {
		out := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			a := answer{status: resp.StatusCode, closed: resp.Close, contentType: resp.Header.Get("Content-Type")}
			var b strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				b.WriteString(sc.Text() + "\n")
			}
			a.body = b.String()
			a.progressSeen = strings.Contains(a.body, "notifications/progress")
			a.streamErrored = strings.Contains(a.body, `"error"`) && strings.Contains(a.body, "the gateway is stopping")
			out <- a
		}()
		return out
	}
	unsent := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
	<-started
	begun := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p"}}}`)
	<-started
	cs := connectClient(t, g)
	stdio := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"})
		stdio <- err
	}()
	<-started

	timedOut, cancel := context.WithCancel(context.Background())
	cancel()
	if left := g.Drain(timedOut); left != 3 {
		t.Errorf("Drain left %d requests, want 3", left)
	}
	if refused := g.Cut(); refused != 1 {
		t.Errorf("Cut answered %d requests 503, want 1", refused)
	}

	if a := <-unsent; a.err != nil || a.status != http.StatusServiceUnavailable || !a.closed || !strings.Contains(a.body, "retry on another gateway") {
		t.Errorf("the call whose answer had not begun: %d (closed %v) %q %v, want 503 with Connection: close", a.status, a.closed, a.body, a.err)
	}
	if a := <-begun; a.err != nil || a.status != http.StatusOK || !a.progressSeen || !a.streamErrored {
		t.Errorf("the call whose stream had begun: %d %q %v, want its progress then a JSON-RPC error saying the gateway is stopping", a.status, a.body, a.err)
	}
	if err := <-stdio; err == nil || !strings.Contains(err.Error(), "the gateway is stopping") {
		t.Errorf("the stdio call: %v, want an error saying the gateway is stopping", err)
	}
	// And a request after the cut is refused like one during the drain.
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a request after the cut: %d, want 503", resp.StatusCode)
	}
}
