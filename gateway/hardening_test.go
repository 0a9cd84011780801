package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// rawPost posts body to url with the headers of a Streamable HTTP client
// (and the session, if any) and returns the status and body.
func rawPost(t *testing.T, url, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	// Only a hung gateway meets this bound: encoding a 12 MiB answer
	// under -race on a busy machine has taken over 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer (%d bytes read): %v", len(b), err)
	}
	return resp.StatusCode, string(b)
}

// TestBatchRefused: a JSON-RPC batch is answered 400 and none of its calls
// run, with or without a session: go-sdk would run them all at once for a
// client that sends no MCP-Protocol-Version header.
func TestBatchRefused(t *testing.T) {
	const calls = 200
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			var ran atomic.Int64
			reg := tools.New(nil)
			register(t, reg, tools.Definition{Name: "count", InputSchema: []byte(`{"type":"object"}`),
				Execute: func(context.Context, tools.Call) (tools.Output, error) {
					ran.Add(1)
					return tools.Output{Value: "ok"}, nil
				}})
			l := serveLimited(t, reg, Config{Stateless: stateless}, serveOptions{})
			session := ""
			if !stateless {
				status, id, _ := openSession(t, l.url)
				if status != http.StatusOK {
					t.Fatalf("initialize: %d", status)
				}
				session = id
				rawPost(t, l.url, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			var b strings.Builder
			b.WriteString(" \n[")
			for i := range calls {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count","arguments":{}}}`, i+10)
			}
			b.WriteString("]")
			status, body := rawPost(t, l.url, session, b.String())
			if status != http.StatusBadRequest || !strings.Contains(body, "batches are not accepted") {
				t.Errorf("batch: %d %.200q, want 400 saying batches are not accepted", status, body)
			}
			if n := ran.Load(); n != 0 {
				t.Errorf("%d calls of the batch ran, want none", n)
			}
			// A single call still goes through, with its leading space.
			status, body = rawPost(t, l.url, session, ` {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{}}}`)
			if status != http.StatusOK || ran.Load() != 1 {
				t.Errorf("single call: %d %.200q, ran %d", status, body, ran.Load())
			}
		})
	}
}

// TestCallsInFlightCapped: a session gets maxCallsPerSession calls running
// at once, the gateway maxCalls over all sessions; one more fails at once
// with an error naming the cap, and the refusals are one log line.
func TestCallsInFlightCapped(t *testing.T) {
	const perSession, total = 3, 5
	release := make(chan struct{})
	var running atomic.Int64
	reg := tools.New(nil)
	register(t, reg, tools.Definition{Name: "block", InputSchema: []byte(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ tools.Call) (tools.Output, error) {
			running.Add(1)
			defer running.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return tools.Output{Value: "ok"}, nil
		}})
	l := serveLimited(t, reg, Config{}, serveOptions{})
	l.g.calls.perSession, l.g.calls.total = perSession, total
	sessions := []*mcp.ClientSession{connectClient(t, l.g), connectClient(t, l.g)}
	call := func(cs *mcp.ClientSession) error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = fmt.Errorf("isError: %v", res.Content)
		}
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	start := func(cs *mcp.ClientSession, n int) {
		for range n {
			wg.Go(func() {
				if err := call(cs); err != nil {
					errs <- err
				}
			})
		}
	}
	start(sessions[0], perSession)
	mcptest.WaitFor(t, wait, "the first session's calls running", func() bool { return running.Load() == perSession })
	if err := call(sessions[0]); err == nil || !strings.Contains(err.Error(), "maxCallsPerSession") {
		t.Errorf("a call past the session's cap: %v, want an error naming maxCallsPerSession", err)
	}
	start(sessions[1], total-perSession)
	mcptest.WaitFor(t, wait, "every allowed call running", func() bool { return running.Load() == total })
	if err := call(sessions[1]); err == nil || !strings.Contains(err.Error(), "maxCalls") {
		t.Errorf("a call past the gateway's cap: %v, want an error naming maxCalls", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call under the caps failed: %v", err)
	}
	if err := call(sessions[0]); err != nil {
		t.Errorf("a call once the others ended: %v", err)
	}
	l.dispose(t)()
	if lines := linesWith(l.log, "refused requests"); len(lines) != 1 || !strings.Contains(lines[0], "refused=2") {
		t.Errorf("refusal log lines = %q, want one with refused=2", lines)
	}
}

// TestReboundHostClosed: a request to the loopback listener under a
// foreign Host (DNS rebinding) is answered 403 and its connection closed.
func TestReboundHostClosed(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{})
	c := l.dial(t)
	br := bufio.NewReader(c)
	resp, body := roundTrip(t, c, br, strings.Replace(rawInitialize(l.addr, ""), "Host: "+l.addr, "Host: evil.example:80", 1))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Host") {
		t.Fatalf("rebound Host: %d %q, want 403 naming the Host", resp.StatusCode, body)
	}
	wantClosed(t, c, br)
}

// TestRequestsBeforeInitializeOneLine: requests without a session that
// are not initialize are refused by go-sdk, which logs an error for each;
// the gateway writes one line with their number instead.
func TestRequestsBeforeInitializeOneLine(t *testing.T) {
	const n = 30
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{})
	for range n {
		rawPost(t, l.url, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	}
	l.dispose(t)()
	if lines := linesWith(l.log, "level=ERROR"); len(lines) != 0 {
		t.Errorf("%d error lines, want none; first: %q", len(lines), lines[0])
	}
	if lines := linesWith(l.log, "refused requests sent out of order"); len(lines) != 1 || !strings.Contains(lines[0], fmt.Sprintf("refused=%d", n)) {
		t.Errorf("refusal lines = %q, want one with refused=%d", lines, n)
	}
}

// TestNonReadingClientCut: a client that asks for a large answer and
// stops reading loses its connection once a chunk of the answer waits
// past the write timeout, so the gateway does not hold the answer for as
// long as the client keeps the connection.
func TestNonReadingClientCut(t *testing.T) {
	const size = 12 << 20 // more than loopback's socket buffers take
	big := strings.Repeat("x", size)
	reg := tools.New(nil)
	register(t, reg, tools.Definition{Name: "big", InputSchema: []byte(`{"type":"object"}`),
		Execute: func(context.Context, tools.Call) (tools.Output, error) {
			return tools.Output{Value: big, Content: []tools.Content{tools.Text(big)}}, nil
		}})
	cut := make(chan struct{}, 1)
	l := serveLimited(t, reg, Config{}, serveOptions{write: 200 * time.Millisecond, writeFailed: func() {
		select {
		case cut <- struct{}{}:
		default:
		}
	}})
	status, id, _ := openSession(t, l.url)
	if status != http.StatusOK {
		t.Fatalf("initialize: %d", status)
	}
	rawPost(t, l.url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c := l.dial(t)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{}}}`
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
		l.addr, id, len(call), call)
	select { // not reading
	case <-cut:
	// Encoding 12 MiB twice under -race on a busy machine has taken over
	// 10 s; the bound is for a gateway that never cuts.
	case <-time.After(2 * wait):
		t.Fatal("no write failed: the gateway still waits for the client to read")
	}
	// The close is bounded from the cut, not from the dial: the cut alone
	// may take most of the dial's deadline on a busy machine.
	c.SetReadDeadline(time.Now().Add(wait))
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open after reading %d bytes", n)
	}
	if n >= size {
		t.Errorf("read %d bytes, the whole answer; want it cut", n)
	}
}
