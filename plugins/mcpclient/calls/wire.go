package calls

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
// Streamable HTTP connection: there Finish does not wait.
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
var tokenPrefix = []byte(`"progressToken":"`)

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.ID.IsValid() {
		if i := bytes.Index(req.Params, tokenPrefix); i >= 0 {
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
