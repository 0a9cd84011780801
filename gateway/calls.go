package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeBusy is the JSON-RPC error code of a request refused because its
// session, or the gateway, has as many requests in flight as it may (a
// code of the range JSON-RPC leaves to servers).
const codeBusy = -32000

// callLimit caps the requests in flight per session and per gateway, so
// that no client, however many requests it sends at once, can have more
// tool calls running (and more answers held in memory) than the caps.
type callLimit struct {
	perSession, total int
	refused           *tally

	mu        sync.Mutex
	n         int
	bySession map[mcp.Session]int
	// idle, once set by drain, is closed when no request is in flight;
	// every counted request is refused from then on.
	idle chan struct{}
}

// uncounted are the requests that are never refused: they cost nothing,
// or refusing them would break the session (a listen lasts as long as
// the session).
func uncounted(method string) bool {
	switch method {
	case "initialize", "ping", "subscriptions/listen":
		return true
	}
	return strings.HasPrefix(method, "notifications/")
}

// middleware refuses a request past a cap with an error that names it.
func (l *callLimit) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if uncounted(method) {
			return next(ctx, method, req)
		}
		ss := req.GetSession()
		// A request that came over HTTP passed the listener's drain
		// check (refuseDraining) before the drain began, and the drain
		// waits for it: refused here, it would be an error inside a 200
		// that no load balancer can retry elsewhere.
		extra := req.GetExtra()
		admitted := extra != nil && extra.Header != nil
		if atCap, err := l.acquire(ss, admitted); err != nil {
			if atCap { // not a drain's refusal: those are the point
				l.refused.Add()
			}
			return nil, err
		}
		defer l.release(ss)
		return next(ctx, method, req)
	}
}

// acquire counts a request of ss, or refuses it: atCap says the refusal
// is a cap's, not a drain's. A request admitted by the HTTP listener
// before a drain is not refused for the drain.
func (l *callLimit) acquire(ss mcp.Session, admitted bool) (atCap bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.idle != nil && !admitted:
		return false, &jsonrpc.Error{Code: codeBusy, Message: "the gateway is draining (shutting down): it finishes the requests in flight and takes no new one; retry on another gateway, or once it is back"}
	case l.bySession[ss] >= l.perSession:
		return true, &jsonrpc.Error{Code: codeBusy, Message: fmt.Sprintf(
			"the gateway is busy: this session has %d requests in flight, its limit (maxCallsPerSession); wait for one to end and retry", l.perSession)}
	case l.n >= l.total:
		return true, &jsonrpc.Error{Code: codeBusy, Message: fmt.Sprintf(
			"the gateway is busy: it has %d requests in flight, its limit (maxCalls); retry later", l.total)}
	}
	l.n++
	l.bySession[ss]++
	return false, nil
}

func (l *callLimit) release(ss mcp.Session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.bySession[ss]--; l.bySession[ss] == 0 {
		delete(l.bySession, ss)
	}
	if l.n == 0 && l.idle != nil {
		select {
		case <-l.idle:
		default:
			close(l.idle)
		}
	}
}

// drain refuses every counted request from now on, and returns a channel
// closed once none is in flight.
func (l *callLimit) drain() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle == nil {
		l.idle = make(chan struct{})
		if l.n == 0 {
			close(l.idle)
		}
	}
	return l.idle
}

// inFlight returns how many counted requests are running.
func (l *callLimit) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// DefaultDrainTimeout bounds a drain when the gateway entry's
// drainTimeout is not set.
const DefaultDrainTimeout = 30 * time.Second

// Drain stops the gateway taking new work and waits for the requests in
// flight to end: from its call on, /readyz answers 503, the HTTP listener
// refuses new sessions and requests (503) and closes connections after
// their current response, and a request on a session already open (such
// as stdio's) fails with an error saying the gateway is draining (but a
// request the HTTP listener took before the drain is answered). It
// returns when no request is in flight, or when ctx ends (a second signal,
// or the drain timeout), with the number still running, which the
// dispose that follows cuts. The gateway stays draining: Close or the
// instance's dispose ends it.
func (g *Gateway) Drain(ctx context.Context) (left int) {
	if !g.draining.Swap(true) {
		g.logger.Info("gateway: draining: no new session or request is taken; waiting for the requests in flight", "inFlight", g.calls.inFlight())
		if g.onDrain != nil {
			g.onDrain()
		}
	}
	calls, posts := g.calls.drain(), g.posts.drain()
	for _, idle := range []<-chan struct{}{calls, posts} {
		select {
		case <-idle:
		case <-ctx.Done():
			return max(g.calls.inFlight(), g.posts.count())
		}
	}
	return 0
}

// cutGrace bounds how long Cut waits for the requests it ended to be
// answered.
const cutGrace = 2 * time.Second

// Cut ends the requests still in flight, such as those a drain gave up on
// (Drain returned some left), each with an answer a client or a load
// balancer can act on, before the dispose closes the connections: an HTTP
// request none of whose answer went out is answered 503, which HAProxy
// sends to another gateway; one whose event stream began gets on it a
// JSON-RPC error saying the gateway is stopping, and so does a request of
// another session (stdio). It waits for those answers at most cutGrace;
// a tool that ignores its cancellation is left to the dispose. It returns
// how many HTTP requests were answered 503. The gateway takes no new work
// after it (as after Drain).
func (g *Gateway) Cut() (refused int) {
	g.draining.Store(true)
	g.calls.drain()
	posts := g.posts.drain()
	refused = g.posts.cutUnsent()
	g.stop()
	t := time.NewTimer(cutGrace)
	defer t.Stop()
	select {
	case <-posts:
	case <-t.C:
	}
	return refused
}

// Draining reports whether Drain was called.
func (g *Gateway) Draining() bool { return g.draining.Load() }

// DrainTimeout returns how long a drain of g may last: the gateway entry's
// drainTimeout, or DefaultDrainTimeout.
func (g *Gateway) DrainTimeout() time.Duration { return g.drainTimeout }

// inFlight counts work in flight until a drain, which refuses new work
// and hears the last one leave.
type inFlight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // set by drain; closed when n is 0
	// answers are the counted requests' writers, for cutUnsent.
	answers map[*sentWriter]struct{}
}

// enter reports whether new work is taken (not draining), counting it
// (and its writer w, when not nil) if count is set.
func (f *inFlight) enter(count bool, w *sentWriter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle != nil {
		return false
	}
	if count {
		f.n++
		if w != nil {
			if f.answers == nil {
				f.answers = map[*sentWriter]struct{}{}
			}
			f.answers[w] = struct{}{}
		}
	}
	return true
}

func (f *inFlight) leave(w *sentWriter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.answers, w)
	if f.n--; f.n == 0 && f.idle != nil {
		close(f.idle)
	}
}

// cutUnsent cuts the answers in flight none of which went out yet, and
// returns how many it cut.
func (f *inFlight) cutUnsent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for w := range f.answers {
		if w.markCut() {
			n++
		}
	}
	return n
}

// drain refuses new work from now on and returns a channel closed once
// none is in flight.
func (f *inFlight) drain() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle == nil {
		f.idle = make(chan struct{})
		if f.n == 0 {
			close(f.idle)
		}
	}
	return f.idle
}

// count returns the work in flight.
func (f *inFlight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
