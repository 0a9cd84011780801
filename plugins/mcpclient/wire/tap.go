package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Message is one message a subscriber hears.
type Message struct {
	// Request is a request or notification of the server's or, when
	// Response is set, the client's request that Response answers.
	Request *jsonrpc.Request
	// Response answers Request, or is nil.
	Response *jsonrpc.Response
}

// Subscriber follows the messages of some methods.
type Subscriber struct {
	// Methods are the methods followed.
	Methods []string
	// Mend, when set, may return a replacement for a request of Methods
	// the client is about to send (nil: it goes as it is).
	Mend func(*jsonrpc.Request) *jsonrpc.Request
	// Received, when set, hears the server's requests and notifications
	// of Methods, and the responses to the client's requests of them, in
	// the order go-sdk reads them off one stream, before go-sdk handles
	// them. It may be called from several goroutines at once (one per
	// HTTP stream).
	Received func(Message)
	// Awaits, when set, says whether Received is to hear the answer to
	// req, asked when the answer comes: over Streamable HTTP an answer no
	// one awaits is not decoded whole (see heard).
	Awaits func(req *jsonrpc.Request) bool
}

// Tap hands the messages of the connections it wraps to its subscribers.
type Tap struct {
	mend     map[string][]func(*jsonrpc.Request) *jsonrpc.Request
	received map[string][]*Subscriber
	// names are the methods followed, quoted as JSON writes them
	// unescaped: a server's message with none of them and no escape is
	// no followed request or notification.
	names [][]byte
}

// New returns a Tap with subs.
func New(subs ...Subscriber) *Tap {
	t := &Tap{mend: map[string][]func(*jsonrpc.Request) *jsonrpc.Request{}, received: map[string][]*Subscriber{}}
	for i := range subs {
		s := &subs[i]
		for _, m := range s.Methods {
			if s.Mend != nil {
				t.mend[m] = append(t.mend[m], s.Mend)
			}
			if s.Received != nil {
				if len(t.received[m]) == 0 {
					t.names = append(t.names, []byte(strconv.Quote(m)))
				}
				t.received[m] = append(t.received[m], s)
			}
		}
	}
	return t
}

// Wrap returns tr with the tap on its connections. A Streamable HTTP
// transport of remote.Streamable is tapped in its HTTP client and returned
// as it is: go-sdk reaches that connection's session hooks through an
// unexported interface that a wrapper would hide.
func (t *Tap) Wrap(tr mcp.Transport) mcp.Transport {
	if st, ok := tr.(*mcp.StreamableClientTransport); ok {
		t.tapHTTP(st)
		return tr
	}
	return &transport{Transport: tr, tap: t}
}

// maxPending bounds the requests awaiting an answer a connection keeps:
// past it, the older half is forgotten (a call whose answer never came,
// its cancellation lost).
const maxPending = 1024

// line is one connection's state: its requests awaiting an answer.
type line struct {
	tap *Tap

	mu      sync.Mutex
	seq     uint64
	pending map[jsonrpc.ID]pending
}

type pending struct {
	req *jsonrpc.Request
	seq uint64
}

func (t *Tap) newLine() *line { return &line{tap: t} }

// sent mends req, notes it when it awaits an answer someone follows, and
// forgets a request the client cancels. It returns what is to be sent.
func (l *line) sent(req *jsonrpc.Request) *jsonrpc.Request {
	if req.Method == "notifications/cancelled" {
		l.cancelled(req.Params)
		return req
	}
	for _, mend := range l.tap.mend[req.Method] {
		if r := mend(req); r != nil {
			req = r
		}
	}
	if req.IsCall() && len(l.tap.received[req.Method]) > 0 {
		l.mu.Lock()
		if l.pending == nil {
			l.pending = map[jsonrpc.ID]pending{}
		}
		l.seq++
		l.pending[req.ID] = pending{req, l.seq}
		if len(l.pending) > maxPending {
			for id, p := range l.pending {
				if p.seq <= l.seq-maxPending/2 {
					delete(l.pending, id)
				}
			}
		}
		l.mu.Unlock()
	}
	return req
}

// cancelled forgets the request a notifications/cancelled names: go-sdk
// retires the call, and drops an answer that comes anyway.
func (l *line) cancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		l.forget(id)
	}
}

func (l *line) forget(id jsonrpc.ID) {
	l.mu.Lock()
	delete(l.pending, id)
	l.mu.Unlock()
}

// received hands msg, read off the connection, to its subscribers.
func (l *line) received(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		for _, s := range l.tap.received[m.Method] {
			s.Received(Message{Request: m})
		}
	case *jsonrpc.Response:
		req := l.answered(m.ID)
		if req == nil {
			return
		}
		for _, s := range l.tap.received[req.Method] {
			if s.Awaits == nil || s.Awaits(req) {
				s.Received(Message{Request: req, Response: m})
			}
		}
	}
}

// answered forgets and returns the request awaiting the answer id, or nil.
func (l *line) answered(id jsonrpc.ID) *jsonrpc.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[id]
	if !ok {
		return nil
	}
	delete(l.pending, id)
	return p.req
}

// pendingFor returns the request awaiting the answer id, or nil.
func (l *line) pendingFor(id jsonrpc.ID) *jsonrpc.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending[id].req
}

// mayFollow reports whether data, a server's message, may be a request or
// notification someone follows: it holds an escape, or one of their
// names as JSON writes it unescaped.
func (l *line) mayFollow(data []byte) bool {
	if bytes.IndexByte(data, '\\') >= 0 {
		return true
	}
	for _, name := range l.tap.names {
		if bytes.Contains(data, name) {
			return true
		}
	}
	return false
}

// awaited reports whether a subscriber awaits the answer to req.
func (l *line) awaited(req *jsonrpc.Request) bool {
	for _, s := range l.tap.received[req.Method] {
		if s.Awaits == nil || s.Awaits(req) {
			return true
		}
	}
	return false
}

// transport taps the connections of a transport go-sdk lets a wrapper
// stand in for (stdio, legacy SSE, in memory).
type transport struct {
	mcp.Transport
	tap *Tap
}

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &connection{Connection: conn, line: t.tap.newLine()}, nil
}

type connection struct {
	mcp.Connection
	line *line
}

func (c *connection) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		msg = c.line.sent(req)
	}
	return c.Connection.Write(ctx, msg)
}

func (c *connection) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.line.received(msg)
	}
	return msg, err
}

// Member returns the value of key in the JSON object obj, matched as
// go-sdk matches a field: exactly, after unescaping, the last of
// duplicates. ok is false when obj is no object or lacks key.
func Member(obj json.RawMessage, key string) (v json.RawMessage, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil, false
	}
	v, ok = m[key]
	return v, ok
}
