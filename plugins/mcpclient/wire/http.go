package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
)

// tapHTTP puts the tap in the HTTP client of st, one line for the one
// connection a transport of remote.Streamable makes.
func (t *Tap) tapHTTP(st *mcp.StreamableClientTransport) {
	max := st.MaxEventSize
	if max == 0 {
		max = mcp.DefaultMaxEventSize
	}
	l := t.newLine()
	remote.Peek(st, func(base http.RoundTripper) http.RoundTripper {
		return &roundTripper{base: base, line: l, max: max}
	})
}

// roundTripper reads the messages go-sdk posts and those it reads of the
// answers and of its GET streams.
type roundTripper struct {
	base http.RoundTripper
	line *line
	max  int // go-sdk's bound on one SSE event, the tap's on a JSON body too

	mu sync.Mutex
	// resume holds the calls whose answer stream ended without their
	// response after events with ids, by the last id: go-sdk resumes such
	// a stream with a GET naming it (Last-Event-ID).
	resume map[string]*jsonrpc.Request
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var call *jsonrpc.Request
	switch req.Method {
	case http.MethodPost:
		req, call = rt.sent(req)
	case http.MethodGet:
		if id := req.Header.Get("Last-Event-ID"); id != "" {
			rt.mu.Lock()
			call = rt.resume[id]
			delete(rt.resume, id)
			rt.mu.Unlock()
		}
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		if call != nil {
			// go-sdk fails the call (or retries the POST, which is
			// noted again).
			rt.line.forget(call.ID)
		}
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "text/event-stream" && (call != nil || req.Method == http.MethodGet):
		b := &sseBody{ReadCloser: resp.Body, rt: rt, call: call}
		b.r = sseReader{max: rt.max, event: b.event}
		resp.Body = b
	case mt == "application/json" && call != nil:
		resp.Body = &jsonBody{ReadCloser: resp.Body, rt: rt, call: call}
	case call != nil:
		rt.line.forget(call.ID) // go-sdk reads no other answer
	}
	return resp, nil
}

// sent reads a POST's message (go-sdk's, which it can give again): the
// request goes out as the subscribers mend it, and is returned when it is
// a call.
func (rt *roundTripper) sent(req *http.Request) (*http.Request, *jsonrpc.Request) {
	if req.GetBody == nil || req.ContentLength <= 0 {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return req, nil
	}
	b, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		return req, nil
	}
	r, ok := decodeSent(b)
	if !ok {
		return req, nil
	}
	m := rt.line.sent(r)
	if m != r {
		if mended, err := jsonrpc.EncodeMessage(m); err == nil {
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(mended))
			req.ContentLength = int64(len(mended))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(mended)), nil }
		} else {
			m = r
		}
	}
	if !m.IsCall() {
		return req, nil
	}
	return req, m
}

// decodeSent decodes a request go-sdk wrote, as it wrote it (go-sdk's
// jsonrpc.DecodeMessage, fit for what a server writes, allocates some 32
// KiB for each of its two passes over a request; docs/upstream.md). A
// response the client sends is of no subscriber's.
func decodeSent(b []byte) (*jsonrpc.Request, bool) {
	var m struct {
		ID     any             `json:"id"`
		Method *string         `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(b, &m) != nil || m.Method == nil {
		return nil, false
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return nil, false
	}
	return &jsonrpc.Request{ID: id, Method: *m.Method, Params: m.Params}, true
}

// jsonBody is a call's answer as one JSON message, heard at its end,
// before go-sdk decodes it. A body past rt.max is not heard.
type jsonBody struct {
	io.ReadCloser
	rt   *roundTripper
	call *jsonrpc.Request

	buf        []byte
	over, done bool
}

func (b *jsonBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.done {
		return n, err
	}
	if !b.over {
		if b.rt.max > 0 && len(b.buf)+n > b.rt.max {
			b.over, b.buf = true, nil
		} else {
			b.buf = append(b.buf, p[:n]...)
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		b.done = true
		if !b.over {
			b.rt.heard(b.buf, b.call)
		}
		b.buf = nil
		b.rt.line.forget(b.call.ID) // when it was not the answer
	case err != nil:
		b.end()
	}
	return n, err
}

func (b *jsonBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

func (b *jsonBody) end() {
	if !b.done {
		b.done, b.buf = true, nil
		b.rt.line.forget(b.call.ID)
	}
}

// sseBody is an SSE stream go-sdk reads: a call's answer (call set) or a
// GET stream. Its messages are heard as go-sdk reads them, up to the
// call's response, after which go-sdk reads no further.
type sseBody struct {
	io.ReadCloser
	rt   *roundTripper
	call *jsonrpc.Request
	r    sseReader

	lastID   string
	answered bool
	ended    bool
}

func (b *sseBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.r.feed(p[:n])
	if err != nil {
		if errors.Is(err, io.EOF) {
			b.r.end()
		}
		b.end()
	}
	return n, err
}

func (b *sseBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

// event hears one event's message; false once go-sdk would read no more.
func (b *sseBody) event(name, id string, data []byte) bool {
	if id != "" {
		b.lastID = id
	}
	if len(data) == 0 || name != "" && name != "message" {
		return true
	}
	answers, ok := b.rt.heard(data, b.call)
	if !ok {
		return false // go-sdk fails the connection
	}
	if answers {
		b.answered = true
		return false
	}
	return true
}

// heard hears data, a message of the server's, and reports whether it
// answers call (go-sdk reads no further on call's stream then), and
// whether it is a message at all.
//
// go-sdk's jsonrpc.DecodeMessage costs some 33 KiB a message
// (docs/upstream.md), so a message that matters to no subscriber is not
// decoded whole. One with no escape and none of the followed methods'
// names written out is no followed request or notification; if it is an
// answer, its members read exactly (answerID) give its id, which is what
// it takes to forget the request it answers and to know the answer go-sdk
// stops at. It is decoded whole when a subscriber awaits it.
func (rt *roundTripper) heard(data []byte, call *jsonrpc.Request) (answers, ok bool) {
	if !rt.line.mayFollow(data) {
		if id, isAnswer, known := answerID(data); known {
			if !isAnswer {
				return false, true
			}
			if req := rt.line.pendingFor(id); req == nil || !rt.line.awaited(req) {
				rt.line.forget(id)
				return call != nil && id == call.ID, true
			}
		}
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return false, false
	}
	rt.line.received(msg)
	resp, isAnswer := msg.(*jsonrpc.Response)
	return isAnswer && call != nil && resp.ID == call.ID, true
}

// answerID reads data's members as go-sdk matches them (exactly,
// unescaped, the last of duplicates): whether it is an answer (no
// "method"), and its id. known is false when that takes go-sdk's decoder
// (not a JSON-RPC 2.0 object, an id that is no id).
func answerID(data []byte) (id jsonrpc.ID, isAnswer, known bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || string(m["jsonrpc"]) != `"2.0"` {
		return jsonrpc.ID{}, false, false
	}
	if _, ok := m["method"]; ok {
		return jsonrpc.ID{}, false, true
	}
	var raw any
	if json.Unmarshal(m["id"], &raw) != nil {
		return jsonrpc.ID{}, false, false
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false, false
	}
	return id, true, true
}

// end notes that the stream ended: a call it did not answer is forgotten
// unless go-sdk may resume the stream (its events had ids).
func (b *sseBody) end() {
	if b.ended {
		return
	}
	b.ended = true
	b.r.stop()
	if b.call == nil || b.answered {
		return
	}
	if b.lastID == "" {
		b.rt.line.forget(b.call.ID)
		return
	}
	b.rt.mu.Lock()
	if b.rt.resume == nil || len(b.rt.resume) >= maxPending {
		b.rt.resume = map[string]*jsonrpc.Request{}
	}
	b.rt.resume[b.lastID] = b.call
	b.rt.mu.Unlock()
}
