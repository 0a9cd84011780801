package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
)

// Why a listed tool is not offered to models.
const (
	unofferedAppOnly      = `its _meta.ui.visibility is ["app"]: only an MCP App's UI may call it, and the host renders no apps`
	unofferedTaskRequired = `its execution.taskSupport is "required", and the host does not support tasks`
)

// unoffered says why no model can use t, or "".
func (s *Set) unoffered(t *mcp.Tool) string {
	if appOnly(t.Meta) {
		return unofferedAppOnly
	}
	if s.tasks.required(t.Name) {
		return unofferedTaskRequired
	}
	return ""
}

// appOnly reports whether a tool's _meta.ui.visibility (MCP Apps) leaves
// the model out. No visibility means both model and app.
func appOnly(meta mcp.Meta) bool {
	ui, _ := meta["ui"].(map[string]any)
	vis, ok := ui["visibility"].([]any)
	if !ok || len(vis) == 0 {
		return false
	}
	return !slices.Contains(vis, any("model"))
}

// logUnoffered logs each left-out tool once per reason, not on every
// re-sync.
func (s *Set) logUnoffered(name, why string) {
	key := name + "\x00" + why
	if s.unofferedLogged[key] {
		return
	}
	if s.unofferedLogged == nil {
		s.unofferedLogged = map[string]bool{}
	}
	s.unofferedLogged[key] = true
	s.opt.Log.Info(s.opt.Label+": tool not offered to models: "+why, "tool", name)
}

// Tasks remembers which tools a server lists with
// execution.taskSupport "required". go-sdk v1.8.0's Tool has no execution
// field (it does not support tasks), so the listing is read below it: a
// connection wrapper notes the ids of tools/list requests and reads the
// raw result of their responses only. The answer to a listing's first page
// starts the set afresh, so a tool the server no longer lists leaves it.
type Tasks struct {
	mu sync.Mutex
	// listing holds the tools/list requests awaiting their answer, true
	// for a first page; a new connection starts it afresh.
	listing  map[jsonrpc.ID]bool
	requires map[string]bool
}

func (tt *Tasks) required(name string) bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.requires[name]
}

// Watch wraps t so that tt sees its tools/list results.
func (tt *Tasks) Watch(t mcp.Transport) mcp.Transport { return &taskWatchTransport{t, tt} }

type taskWatchTransport struct {
	mcp.Transport
	tt *Tasks
}

func (w *taskWatchTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// Requests of an earlier connection are answered never.
	w.tt.mu.Lock()
	w.tt.listing = nil
	w.tt.mu.Unlock()
	return &taskWatchConn{conn, w.tt}, nil
}

type taskWatchConn struct {
	mcp.Connection
	tt *Tasks
}

func (c *taskWatchConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		var params struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(req.Params, &params)
		c.tt.mu.Lock()
		if c.tt.listing == nil {
			c.tt.listing = map[jsonrpc.ID]bool{}
		}
		c.tt.listing[req.ID] = params.Cursor == ""
		c.tt.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *taskWatchConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.tt.mu.Lock()
		if first, ok := c.tt.listing[resp.ID]; ok {
			delete(c.tt.listing, resp.ID)
			if first && resp.Error == nil {
				c.tt.requires = nil
			}
			c.tt.note(resp.Result)
		}
		c.tt.mu.Unlock()
	}
	return msg, err
}

// note records one page of tools/list (tt.mu held).
func (tt *Tasks) note(result json.RawMessage) {
	var page struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &page) != nil {
		return
	}
	for _, t := range page.Tools {
		if t.Execution.TaskSupport == "required" {
			if tt.requires == nil {
				tt.requires = map[string]bool{}
			}
			tt.requires[t.Name] = true
		} else {
			delete(tt.requires, t.Name)
		}
	}
}

// Over Streamable HTTP the connection cannot be wrapped (go-sdk opens the
// standalone GET stream through an unexported hook of its own connection),
// so the listing is read in the HTTP client instead: taskPeek sees each
// POST of a tools/list request and reads the answer's body as go-sdk reads
// it, a JSON body or an SSE stream, holding at most maxListingPeek bytes of
// it. An answer past that is not read (its tools are offered).
const maxListingPeek = 8 << 20

// PeekHTTP has tt read the tools/list answers of a Streamable HTTP
// attempt (remote.Peek).
func (tt *Tasks) PeekHTTP(tr mcp.Transport) {
	remote.Peek(tr, func(base http.RoundTripper) http.RoundTripper { return &taskPeek{base: base, tt: tt} })
}

type taskPeek struct {
	base http.RoundTripper
	tt   *Tasks
}

func (p *taskPeek) RoundTrip(req *http.Request) (*http.Response, error) {
	id, first, ok := listingRequest(req)
	resp, err := p.base.RoundTrip(req)
	if err != nil || !ok || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	l := &listingBody{ReadCloser: resp.Body, tt: p.tt, id: id, first: first}
	switch ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct {
	case "application/json":
		l.whole = true
	case "text/event-stream":
	default:
		return resp, nil
	}
	resp.Body = l
	return resp, nil
}

// listingRequest reads a POST's body (go-sdk's, which it can give again)
// and reports whether it is a tools/list request, its id, and whether it
// asks for the first page.
func listingRequest(req *http.Request) (jsonrpc.ID, bool, bool) {
	if req.Method != http.MethodPost || req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > 64<<10 {
		return jsonrpc.ID{}, false, false
	}
	body, err := req.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false, false
	}
	defer body.Close()
	b := make([]byte, req.ContentLength)
	if _, err := io.ReadFull(body, b); err != nil {
		return jsonrpc.ID{}, false, false
	}
	// Every POST passes here, tools/call included: only a body that
	// holds the method's name is decoded (go-sdk writes it unescaped).
	if !bytes.Contains(b, []byte(`"tools/list"`)) {
		return jsonrpc.ID{}, false, false
	}
	msg, err := jsonrpc.DecodeMessage(b)
	r, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || r.Method != "tools/list" || !r.ID.IsValid() {
		return jsonrpc.ID{}, false, false
	}
	var params struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(r.Params, &params)
	return r.ID, params.Cursor == "", true
}

// listingBody is the body of a tools/list POST's answer: what go-sdk reads
// of it is read here too, before go-sdk has it, up to the answer.
type listingBody struct {
	io.ReadCloser
	tt    *Tasks
	id    jsonrpc.ID
	first bool
	whole bool // a JSON body; else an SSE stream

	line, data []byte // SSE: the line being read, the event's data
	over       bool   // past maxListingPeek: the rest (of the event) is not read
	longLine   bool   // the line being read is past maxListingPeek
	done       bool   // the answer was read
}

func (l *listingBody) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	if !l.done {
		if l.whole {
			l.add(&l.data, p[:n])
			if err == io.EOF {
				l.message(l.data)
			}
		} else {
			l.scan(p[:n])
		}
	}
	return n, err
}

// add appends b to *buf, unless that passes maxListingPeek.
func (l *listingBody) add(buf *[]byte, b []byte) {
	if l.over || len(*buf)+len(b) > maxListingPeek {
		l.over = true
		*buf = nil
		return
	}
	*buf = append(*buf, b...)
}

func (l *listingBody) addLine(b []byte) {
	if l.longLine || len(l.line)+len(b) > maxListingPeek {
		l.longLine, l.over, l.line = true, true, l.line[:0]
		return
	}
	l.line = append(l.line, b...)
}

// scan reads SSE lines: data fields make up an event, a blank line ends it.
func (l *listingBody) scan(b []byte) {
	for len(b) > 0 && !l.done {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.addLine(b)
			return
		}
		l.addLine(b[:i])
		b = b[i+1:]
		if l.longLine {
			// Its event is over; the line is no blank one.
			l.longLine, l.line = false, l.line[:0]
			continue
		}
		line := bytes.TrimSuffix(l.line, []byte{'\r'})
		switch {
		case len(line) == 0:
			if !l.over && len(l.data) > 0 {
				l.message(l.data)
			}
			l.data, l.over = l.data[:0], false
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte{' '})
			if len(l.data) > 0 {
				l.add(&l.data, []byte{'\n'})
			}
			l.add(&l.data, v)
		}
		l.line = l.line[:0]
	}
}

// message notes the answer, if b is it.
func (l *listingBody) message(b []byte) {
	msg, err := jsonrpc.DecodeMessage(b)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || resp.ID != l.id {
		return
	}
	l.done = true
	l.line, l.data = nil, nil
	if resp.Error != nil {
		return
	}
	l.tt.mu.Lock()
	defer l.tt.mu.Unlock()
	if l.first {
		l.tt.requires = nil
	}
	l.tt.note(resp.Result)
}

// names returns the tools that require tasks, sorted.
func (tt *Tasks) names() []string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	out := make([]string, 0, len(tt.requires))
	for n := range tt.requires {
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// set replaces the tools that require tasks (from the catalog cache).
func (tt *Tasks) set(names []string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.requires = nil
	for _, n := range names {
		if tt.requires == nil {
			tt.requires = map[string]bool{}
		}
		tt.requires[n] = true
	}
}
