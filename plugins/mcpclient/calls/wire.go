package calls

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
)

// Progress up to the result. go-sdk reads a connection's messages in
// order, but hands a response to its call at once while notifications
// wait on a queue of their own: the last progress notifications a server
// sends before its result may be handled after the call is over, and
// dropped then. Watch counts, on the wire, the progress notifications of
// each call read before its response, so that Finish can wait (at most
// catchUpMax) until they have been relayed: the caller hears a call's
// progress in order, up to its result.

// catchUpMax bounds how long Finish waits for the progress read before
// the result to be relayed (a caller's progress function that hangs).
const catchUpMax = time.Second

// Watch wraps tr so that t sees, in wire order, the progress notifications
// and responses of its calls. go-sdk lets no wrapper stand in for a
// Streamable HTTP connection: there PeekHTTP reads the calls' streams.
func (t *Table) Watch(tr mcp.Transport) mcp.Transport { return &wireTransport{tr, t} }

type wireTransport struct {
	mcp.Transport
	t *Table
}

func (w *wireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w.t.watchesWire.Store(true)
	return &wireConn{Connection: conn, t: w.t, tokens: map[jsonrpc.ID]string{}}, nil
}

type wireConn struct {
	mcp.Connection
	t *Table

	mu     sync.Mutex
	tokens map[jsonrpc.ID]string // the progress token of each tools/call awaiting its response
}

// tokenPrefix starts the _meta.progressToken of every call Start made, as
// go-sdk writes it (the _meta field comes first in CallToolParams).
const tokenPrefix = `"progressToken":"`

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.ID.IsValid() {
		if i := bytes.Index(req.Params, []byte(tokenPrefix)); i >= 0 {
			rest := req.Params[i+len(tokenPrefix):]
			if j := bytes.IndexByte(rest, '"'); j > 0 {
				c.mu.Lock()
				c.tokens[req.ID] = string(rest[:j])
				if len(c.tokens) > pruneAt {
					c.pruneLocked()
				}
				c.mu.Unlock()
			}
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "notifications/message" {
			c.t.logsOnWire.Add(1)
			break
		}
		if m.Method != "notifications/progress" {
			break
		}
		var p struct {
			Token any `json:"progressToken"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			break
		}
		if token, ok := p.Token.(string); ok {
			if call := c.t.lookup(token); call != nil {
				call.mu.Lock()
				call.wire++
				call.mu.Unlock()
			}
		}
	case *jsonrpc.Response:
		c.mu.Lock()
		token, ok := c.tokens[m.ID]
		delete(c.tokens, m.ID)
		c.mu.Unlock()
		if !ok {
			break
		}
		if call := c.t.lookup(token); call != nil {
			call.mu.Lock()
			call.answeredAfter = call.wire
			call.mu.Unlock()
		}
	}
	return msg, nil
}

// pruneAt is how many requests awaiting a response a connection notes
// before it forgets those of calls over: a server that honours a
// cancellation never answers the call, whose entry would stay.
const pruneAt = 256

func (c *wireConn) pruneLocked() {
	for id, token := range c.tokens {
		if c.t.lookup(token) == nil {
			delete(c.tokens, id)
		}
	}
}

func (t *Table) lookup(token string) *Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[token]
}

// PeekHTTP has t count, over Streamable HTTP, the progress notifications
// each call's POST answer streams: go-sdk reads that stream's events in
// order and the call's result last, so what was counted when the call
// returns is what Finish waits to see relayed.
func (t *Table) PeekHTTP(tr mcp.Transport) {
	remote.Peek(tr, func(base http.RoundTripper) http.RoundTripper { return &progressPeek{base: base, t: t} })
}

type progressPeek struct {
	base http.RoundTripper
	t    *Table
}

// callHead is how much of a POST's body is read for a call's progress
// token: go-sdk writes _meta first in the params, after the method.
const callHead = 1024

func (p *progressPeek) RoundTrip(req *http.Request) (*http.Response, error) {
	call := p.callOf(req)
	resp, err := p.base.RoundTrip(req)
	if call == nil || err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		call.mu.Lock()
		call.countsWire = true
		call.mu.Unlock()
		resp.Body = &progressBody{ReadCloser: resp.Body, call: call}
	}
	return resp, nil
}

// callOf returns the call whose tools/call req posts, or nil.
func (p *progressPeek) callOf(req *http.Request) *Call {
	if req.Method != http.MethodPost || req.GetBody == nil || req.ContentLength <= 0 {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	head := make([]byte, min(req.ContentLength, callHead))
	n, _ := io.ReadFull(body, head)
	head = head[:n]
	if !bytes.Contains(head, []byte(`"tools/call"`)) {
		return nil
	}
	i := bytes.Index(head, []byte(tokenPrefix))
	if i < 0 {
		return nil
	}
	rest := head[i+len(tokenPrefix):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return nil
	}
	return p.t.lookup(string(rest[:j]))
}

// maxProgressEvent bounds the data of one event read here: a progress
// notification is small, and a larger event (the result) is not kept.
const maxProgressEvent = 16 << 10

// progressBody counts the call's progress events as go-sdk reads them.
type progressBody struct {
	io.ReadCloser
	call       *Call
	line, data []byte
	over       bool // the event's data passed maxProgressEvent
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.scan(p[:n])
	return n, err
}

// scan reads SSE lines: data fields make up an event, a blank line ends it.
func (b *progressBody) scan(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			b.addLine(chunk)
			return
		}
		b.addLine(chunk[:i])
		chunk = chunk[i+1:]
		line := bytes.TrimSuffix(b.line, []byte{'\r'})
		switch {
		case len(line) == 0:
			if !b.over && len(b.data) > 0 {
				b.event(b.data)
			}
			b.data, b.over = b.data[:0], false
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte{' '})
			if b.over || len(b.data)+len(v)+1 > maxProgressEvent {
				b.over, b.data = true, b.data[:0]
			} else {
				if len(b.data) > 0 {
					b.data = append(b.data, '\n')
				}
				b.data = append(b.data, v...)
			}
		}
		b.line = b.line[:0]
	}
}

func (b *progressBody) addLine(part []byte) {
	if len(b.line)+len(part) > maxProgressEvent {
		// A line this long is no progress notification's.
		b.over, b.line = true, b.line[:0]
		return
	}
	b.line = append(b.line, part...)
}

func (b *progressBody) event(data []byte) {
	if !bytes.Contains(data, []byte(`"notifications/progress"`)) {
		return
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Token any `json:"progressToken"`
		} `json:"params"`
	}
	if json.Unmarshal(data, &m) != nil || m.Method != "notifications/progress" {
		return
	}
	if token, _ := m.Params.Token.(string); token == b.call.token {
		b.call.mu.Lock()
		b.call.wire++
		b.call.mu.Unlock()
	}
}
