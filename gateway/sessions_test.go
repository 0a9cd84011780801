package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// rawClient speaks JSON-RPC lines to a gateway over pipes, seeing every
// message in the order the server wrote it.
type rawClient struct {
	w    io.Writer
	msgs chan map[string]any
}

func connectRaw(t *testing.T, g *Gateway) *rawClient {
	t.Helper()
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	ss, err := g.Server().Connect(context.Background(), &mcp.IOTransport{Reader: serverR, Writer: serverW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{w: clientW, msgs: make(chan map[string]any, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.msgs)
		sc := bufio.NewScanner(clientR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		ss.Close()
		clientW.Close()
		clientR.Close()
		<-done
	})
	return c
}

func (c *rawClient) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(c.w, msg+"\n"); err != nil {
		t.Fatal(err)
	}
}

// until reads up to the response with id and returns the methods of the
// notifications that came before it, and the response.
func (c *rawClient) until(t *testing.T, id int) (notified []string, resp map[string]any) {
	t.Helper()
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				t.Fatalf("connection closed before the response %d", id)
			}
			if method, ok := m["method"].(string); ok {
				notified = append(notified, method)
				continue
			}
			if got, ok := m["id"].(float64); ok && int(got) == id {
				return notified, m
			}
		case <-time.After(wait):
			t.Fatalf("no response %d within %s", id, wait)
		}
	}
}

// listeningGateway serves a gateway over reg on loopback HTTP as well, so
// that a second session (an HTTP one without an event stream, whose
// undelivered notifications the gateway counts) can show when go-sdk has
// gone through its sessions for a change.
func listeningGateway(t *testing.T, reg *tools.Registry) (*Gateway, string) {
	t.Helper()
	// Enabled, so that go-sdk's warnings of undelivered notifications are
	// counted.
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := host.NewScope(context.Background(), "test", logger)
	t.Cleanup(func() {
		if err := s.Dispose(wait); err != nil {
			t.Error(err)
		}
	})
	// No re-assembly but the one a request makes: a client's list syncs.
	g, err := New(s, reg, nil, &Deps{Logger: logger, Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g.undelivered.setInterval(time.Hour)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return g, serve(s, g, ln, serveOptions{})
}

// witness is an HTTP session done with its handshake that never lists and
// has no event stream: every change reaches it, as an undelivered
// notification. go-sdk notifies its sessions one after the other, in the
// order they connected; once the witness's count moves, the sessions
// before it have had theirs.
func witness(t *testing.T, g *Gateway, url string) (until func(n int)) {
	t.Helper()
	status, id, _ := openSession(t, url)
	if status != 200 || id == "" {
		t.Fatalf("initialize: %d %q", status, id)
	}
	sendInitialized(t, url, id)
	return func(n int) {
		t.Helper()
		mcptest.WaitFor(t, wait, fmt.Sprintf("change %d to reach the witness session", n), func() bool {
			g.undelivered.mu.Lock()
			defer g.undelivered.mu.Unlock()
			return g.undelivered.n >= n
		})
	}
}

const initializeLine = initialize

// TestNoNotificationBeforeTheInitializeResult: a change while a client's
// session is open but before its initialize reaches it as nothing: the
// first message it reads is its initialize result. Once it is done with
// the handshake and has listed, a change reaches it.
func TestNoNotificationBeforeTheInitializeResult(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("first"))
	g, url := listeningGateway(t, reg)
	c := connectRaw(t, g) // connected, not yet initialized
	changed := witness(t, g, url)

	register(t, reg, echo("added"))
	if err := g.syncNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	changed(1)
	c.send(t, initializeLine)
	if notified, _ := c.until(t, 1); len(notified) > 0 {
		t.Fatalf("notifications before the initialize result: %v", notified)
	}
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if notified, resp := c.until(t, 2); len(notified) > 0 || !strings.Contains(fmt.Sprint(resp), "added") {
		t.Fatalf("tools/list = %v after notifications %v; want added listed, nothing before", resp, notified)
	}

	register(t, reg, echo("later"))
	if err := g.syncNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	changed(2)
	c.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if notified, _ := c.until(t, 3); len(notified) != 1 || notified[0] != "notifications/tools/list_changed" {
		t.Fatalf("notifications after a change the client had not listed: %v; want one tools/list_changed", notified)
	}
}

// TestListChangedOnlyForWhatTheClientHasNotListed: a change that a client's
// own list already showed (its tools/list brought the surface up to date)
// is not announced to it; a session that has not listed it is told.
func TestListChangedOnlyForWhatTheClientHasNotListed(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("first"))
	g, url := listeningGateway(t, reg)
	c := connectRaw(t, g)
	c.send(t, initializeLine)
	c.until(t, 1)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	c.until(t, 2)
	changed := witness(t, g, url)

	register(t, reg, echo("added"))
	mcptest.WaitFor(t, wait, "the gateway to hear of the change", g.stale.Load)
	c.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if _, resp := c.until(t, 3); !strings.Contains(fmt.Sprint(resp), "added") {
		t.Fatalf("tools/list = %v; want the added tool", resp)
	}
	changed(1) // the witness, which has not listed, is told
	c.send(t, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if notified, _ := c.until(t, 4); len(notified) > 0 {
		t.Fatalf("notifications of a change the client's list had shown: %v", notified)
	}
}

// TestNoCacheFieldsBeforeTheNewProtocol: a client of MCP before
// 2026-07-28 reads resources and lists without the ttlMs and cacheScope
// that go-sdk adds to every such result (no server sent them, and its
// protocol has none); a 2026-07-28 client gets them, as its protocol
// requires.
func TestNoCacheFieldsBeforeTheNewProtocol(t *testing.T) {
	res := resources.New(nil)
	src, err := res.Register(scope(t), resources.Provider{
		Server: "srv",
		Read: func(ctx context.Context, uri string, _ *tools.Channels) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "hello"}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	src.Set([]*mcp.Resource{{URI: "srv://a", Name: "a"}}, nil)
	src.Listed()
	reg := tools.New(nil)
	register(t, reg, echo("first"))
	g, err := New(scope(t), reg, nil, &Deps{Resources: res})
	if err != nil {
		t.Fatal(err)
	}
	c := connectRaw(t, g)
	c.send(t, initializeLine)
	c.until(t, 1)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, req := range []string{
		`"method":"resources/read","params":{"uri":"srv://a"}`,
		`"method":"resources/list"`,
		`"method":"resources/templates/list"`,
		`"method":"prompts/list"`,
		`"method":"tools/list"`,
	} {
		id := 10 + i
		c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, id, req))
		_, resp := c.until(t, id)
		result, _ := resp["result"].(map[string]any)
		if result == nil {
			t.Errorf("{%s}: no result: %v", req, resp)
			continue
		}
		for _, key := range []string{"ttlMs", "cacheScope"} {
			if _, ok := result[key]; ok {
				t.Errorf("{%s}: the result has %s: %v", req, key, result)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(func() map[string]any {
		c.send(t, `{"jsonrpc":"2.0","id":30,"method":"resources/read","params":{"uri":"srv://a"}}`)
		_, resp := c.until(t, 30)
		return resp
	}()), "hello") {
		t.Error("resources/read lost the contents")
	}

	cs := connectWith(t, g, nil, "2026-07-28")
	read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "srv://a"})
	if err != nil || read.CacheScope != "public" {
		t.Errorf("2026-07-28 resources/read = %+v, %v; want cacheScope public", read, err)
	}
}

// TestProblemReachesClients: SetProblem's text heads the instructions,
// comes to a client as an error log message once it is done with the
// handshake (and to every such client when it changes), and is added to a
// failed call's error.
func TestProblemReachesClients(t *testing.T) {
	reg := tools.New(nil)
	g, err := New(scope(t), reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.SetProblem("the file is broken")
	c := connectRaw(t, g)
	c.send(t, initializeLine)
	if _, resp := c.until(t, 1); !strings.Contains(fmt.Sprint(resp), "the file is broken") {
		t.Errorf("initialize = %v; want the problem in the instructions", resp)
	}
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}`)
	notified, resp := c.until(t, 2)
	if len(notified) != 1 || notified[0] != "notifications/message" {
		t.Errorf("notifications after initialized: %v; want the problem as a log message", notified)
	}
	if !strings.Contains(fmt.Sprint(resp), "the file is broken") {
		t.Errorf("tools/call of an unknown tool = %v; want the problem in the error", resp)
	}
	g.SetProblem("another problem")
	c.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if notified, _ := c.until(t, 3); len(notified) != 1 {
		t.Errorf("notifications after the problem changed: %v; want one log message", notified)
	}
	g.SetProblem("")
	register(t, reg, echo("works"))
	c.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`)
	if _, resp := c.until(t, 4); strings.Contains(fmt.Sprint(resp), "problem") {
		t.Errorf("tools/call after the problem was cleared = %v", resp)
	}
}
