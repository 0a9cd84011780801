package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a session lists, and the list_changed notification of each. go-sdk
// announces every change of the server's lists to every session, before
// its initialize result too; the gateway passes one on only to a session
// whose client could list something else than it last did (sessions.go).
const (
	listTools = iota
	listPrompts
	listResources
	listKinds
)

// changedKind is the kind a list_changed notification is about.
func changedKind(method string) (int, bool) {
	switch method {
	case "notifications/tools/list_changed":
		return listTools, true
	case "notifications/prompts/list_changed":
		return listPrompts, true
	case "notifications/resources/list_changed":
		return listResources, true
	}
	return 0, false
}

// listKind is the kind a list request lists.
func listKind(method string) (int, bool) {
	switch method {
	case "tools/list":
		return listTools, true
	case "prompts/list":
		return listPrompts, true
	case "resources/list", "resources/templates/list":
		return listResources, true
	}
	return 0, false
}

// sessionLists is what the gateway knows of its sessions: which clients
// have finished the handshake, and what each last listed.
type sessionLists struct {
	// sigs are the signatures of the lists the server serves now, by
	// kind; a sync stores one after changing the server's lists.
	sigs [listKinds]atomic.Pointer[string]

	mu sync.Mutex
	m  map[*mcp.ServerSession]*sessionState
	// pruneAt is the size of m at which ended sessions are dropped.
	pruneAt int
}

// sessionState is one session that began with initialize.
type sessionState struct {
	// ready: the client sent notifications/initialized, so it has the
	// initialize result and may be sent anything.
	ready bool
	// listed holds, by kind, the signature of the lists when the client
	// last listed them (or initialized, before it listed).
	listed [listKinds]string
}

// minPrune is the fewest tracked sessions before ended ones are pruned.
const minPrune = 64

// signature is the identity of a served list: its entries' names and
// listings, in name order.
func signature(entries map[string]string) string {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, _ := json.Marshal([2]string{n, entries[n]})
		h.Write(b)
	}
	return string(h.Sum(nil))
}

// changing says kind's lists are about to change: until setSig, no
// signature is known, and every notification of kind passes.
// ready reports whether ss has sent notifications/initialized already.
func (l *sessionLists) ready(ss *mcp.ServerSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.m[ss]
	return st != nil && st.ready
}

func (l *sessionLists) changing(kind int) { l.setSig(kind, "") }

// setSig records the signature of kind's lists once the server's lists
// changed (after changing).
func (l *sessionLists) setSig(kind int, sig string) { l.sigs[kind].Store(&sig) }

func (l *sessionLists) sig(kind int) string {
	if p := l.sigs[kind].Load(); p != nil {
		return *p
	}
	return ""
}

// legacy reports whether ss began with initialize (MCP before 2026-07-28,
// whose lists and reads carry no cache fields, and whose clients get every
// list_changed unasked).
func legacy(ss *mcp.ServerSession) bool {
	return ss.InitializeParams() != nil && !newProtocol(ss)
}

// track is a receiving middleware: it records a session's initialize (as
// its first view of every list), its initialized notification, and what
// it lists. The signature is taken before the list is made, so a change in
// between is announced again rather than missed.
func (g *Gateway) track(next mcp.MethodHandler) mcp.MethodHandler {
	l := &g.lists
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return next(ctx, method, req)
		}
		switch method {
		case "initialize":
			st := &sessionState{}
			for k := range st.listed {
				st.listed[k] = l.sig(k)
			}
			l.mu.Lock()
			if l.m == nil {
				l.m = map[*mcp.ServerSession]*sessionState{}
			}
			if len(l.m) >= max(l.pruneAt, minPrune) {
				live := map[*mcp.ServerSession]bool{}
				for s := range g.server.Sessions() {
					live[s] = true
				}
				for s := range l.m {
					if !live[s] {
						delete(l.m, s)
					}
				}
				l.pruneAt = 2 * len(l.m)
			}
			l.m[ss] = st
			l.mu.Unlock()
		case "notifications/initialized":
			l.mu.Lock()
			if st := l.m[ss]; st != nil {
				st.ready = true
			}
			l.mu.Unlock()
			res, err := next(ctx, method, req)
			if p := g.problem.Load(); p != nil && *p != "" {
				g.tell(ctx, ss, *p)
			}
			return res, err
		default:
			if kind, ok := listKind(method); ok && cursor(req) == "" {
				sig := l.sig(kind)
				l.mu.Lock()
				if st := l.m[ss]; st != nil {
					st.listed[kind] = sig
				}
				l.mu.Unlock()
			}
		}
		return next(ctx, method, req)
	}
}

// cursor is a list request's cursor ("" for its first page).
func cursor(req mcp.Request) string {
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListPromptsParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListResourcesParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if p != nil {
			return p.Cursor
		}
	}
	return ""
}

// filter is a sending middleware: a list_changed notification reaches a
// session that began with initialize only once its client has the
// initialize result, and only when the lists differ from what it last
// listed. Sessions of the new protocol asked for the notifications they
// get (subscriptions/listen), and get them all.
func (g *Gateway) filter(next mcp.MethodHandler) mcp.MethodHandler {
	g.send = next
	l := &g.lists
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		kind, ok := changedKind(method)
		if !ok {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return next(ctx, method, req)
		}
		p := ss.InitializeParams()
		switch {
		case p == nil:
			return nil, nil // no handshake yet: the client lists once it has one
		case newProtocol(ss):
			return next(ctx, method, req)
		}
		l.mu.Lock()
		st := l.m[ss]
		sig := l.sig(kind)
		skip := st != nil && (!st.ready || sig != "" && st.listed[kind] == sig)
		l.mu.Unlock()
		if skip {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// SetProblem says what is wrong with the composition the gateway serves
// (a file that does not load, an edit not applied), or nothing (""), for
// clients to show: it heads the instructions of the clients that connect,
// goes to every connected client as an error log message, and is added to
// every failed call's error.
func (g *Gateway) SetProblem(text string) {
	if old := g.problem.Swap(&text); old != nil && *old == text || text == "" {
		return
	}
	g.lists.mu.Lock()
	var ready []*mcp.ServerSession
	for ss, st := range g.lists.m {
		if st.ready {
			ready = append(ready, ss)
		}
	}
	g.lists.mu.Unlock()
	for _, ss := range ready {
		g.tell(g.ctx, ss, text)
	}
}

// tell sends the problem to ss as an error log message, whatever level its
// client set (go-sdk's Log sends nothing to a client that set none).
func (g *Gateway) tell(ctx context.Context, ss *mcp.ServerSession, text string) {
	if g.send == nil {
		return
	}
	_, _ = g.send(ctx, "notifications/message", &mcp.ServerRequest[*mcp.LoggingMessageParams]{
		Session: ss, Params: &mcp.LoggingMessageParams{Level: "error", Logger: "dsh-host", Data: text}})
}

// withProblem adds the problem, if any, to a failed tools/call, and puts it
// before the instructions of initialize.
func (g *Gateway) withProblem(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		p := g.problem.Load()
		if p == nil || *p == "" {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			if r != nil {
				r.Instructions = joinText(*p, r.Instructions)
			}
		case *mcp.DiscoverResult:
			if r != nil {
				r.Instructions = joinText(*p, r.Instructions)
			}
		case *mcp.CallToolResult:
			if r != nil && r.IsError {
				r.Content = append(r.Content, &mcp.TextContent{Text: *p})
			}
		}
		if err != nil && method == "tools/call" {
			var we *jsonrpc.Error
			if errors.As(err, &we) {
				return nil, &jsonrpc.Error{Code: we.Code, Message: we.Message + " (" + *p + ")", Data: we.Data}
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error() + " (" + *p + ")"}
		}
		return res, err
	}
}

func joinText(a, b string) string {
	if b == "" {
		return a
	}
	return a + "\n\n" + b
}

// noCacheFields is a receiving middleware that sends a client before
// 2026-07-28 its lists and resource reads without the ttlMs and
// cacheScope go-sdk adds to every such result: those fields are the new
// protocol's, and no server the gateway relays sent them.
func noCacheFields(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if err != nil || res == nil || ss == nil || !legacy(ss) {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.ReadResourceResult:
			return wireAs{r, struct {
				Meta     mcp.Meta                `json:"_meta,omitempty"`
				Contents []*mcp.ResourceContents `json:"contents"`
			}{r.Meta, r.Contents}}, nil
		case *mcp.ListToolsResult:
			return wireAs{r, struct {
				Meta       mcp.Meta    `json:"_meta,omitempty"`
				NextCursor string      `json:"nextCursor,omitempty"`
				Tools      []*mcp.Tool `json:"tools"`
			}{r.Meta, r.NextCursor, r.Tools}}, nil
		case *mcp.ListPromptsResult:
			return wireAs{r, struct {
				Meta       mcp.Meta      `json:"_meta,omitempty"`
				NextCursor string        `json:"nextCursor,omitempty"`
				Prompts    []*mcp.Prompt `json:"prompts"`
			}{r.Meta, r.NextCursor, r.Prompts}}, nil
		case *mcp.ListResourcesResult:
			return wireAs{r, struct {
				Meta       mcp.Meta        `json:"_meta,omitempty"`
				NextCursor string          `json:"nextCursor,omitempty"`
				Resources  []*mcp.Resource `json:"resources"`
			}{r.Meta, r.NextCursor, r.Resources}}, nil
		case *mcp.ListResourceTemplatesResult:
			return wireAs{r, struct {
				Meta              mcp.Meta                `json:"_meta,omitempty"`
				NextCursor        string                  `json:"nextCursor,omitempty"`
				ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
			}{r.Meta, r.NextCursor, r.ResourceTemplates}}, nil
		}
		return res, err
	}
}

// wireAs is a result that goes on the wire as wire: it is the result to
// go-sdk (the embedded one), and another encoding to the client.
type wireAs struct {
	mcp.Result
	wire any
}

func (w wireAs) MarshalJSON() ([]byte, error) { return json.Marshal(w.wire) }
