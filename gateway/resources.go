package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/reconcile"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/debounce"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// bridge serves what the resources service gathers from every MCP server
// besides tools: resources, resource templates, subscriptions, prompts and
// completion. Resource URIs pass unchanged (a URI two servers list is read
// from the first, as the service routes it); prompts are named like tools.
//
// The server's lists follow the service by diff, debounced like the tools:
// go-sdk announces list_changed for what is added or removed (to the
// sessions that need it, sessions.go). The resources and prompts
// capabilities are advertised from the start (startup).
type bridge struct {
	g     *Gateway
	res   *resources.Registry // nil: nothing to serve
	scope *host.Scope

	refresh *debounce.Debouncer
	// stale: the service announced a change the server's lists do not
	// have yet; a request that lists syncs first (startup). syncing: a
	// sync is changing them; a request that lists waits for it.
	stale, syncing atomic.Bool

	// What the server serves, each entry's state its listing's JSON, by
	// URI, URI template and served name; guarded by syncMu.
	syncMu    sync.Mutex // serializes syncs
	resources *reconcile.Set[string, *mcp.Resource]
	templates *reconcile.Set[string, *mcp.ResourceTemplate]
	prompts   *reconcile.Set[string, *mcp.Prompt]

	subMu sync.Mutex
	subs  map[string]*followed // URI -> the service's subscription for it

	born    time.Time     // when the gateway started (StartupWait)
	updates chan string   // URIs whose update goes to the subscribed sessions
	stopped chan struct{} // closed when the notifier has returned
}

// followed is one URI the gateway's clients subscribed to: one subscription
// on the service, held while some session wants it.
type followed struct {
	cancel   func()
	sessions map[*mcp.ServerSession]bool
}

// maxPendingUpdates bounds the resources/updated notifications waiting for
// slow clients; beyond it an update is dropped (and logged), so that a
// flood never blocks the server that sends it.
const maxPendingUpdates = 256

// newBridge makes the bridge for res (nil serves nothing) and sets its
// handlers on opts, before the server is made.
func newBridge(g *Gateway, s *host.Scope, res *resources.Registry, opts *mcp.ServerOptions) *bridge {
	b := &bridge{g: g, res: res, scope: s, born: time.Now(), subs: map[string]*followed{}}
	b.resourceSets()
	b.promptSet()
	if res == nil {
		return b
	}
	opts.SubscribeHandler = b.subscribe
	opts.UnsubscribeHandler = b.unsubscribe
	opts.CompletionHandler = b.complete
	opts.HasResources, opts.HasPrompts = true, true
	return b
}

// start serves the service's current lists and follows its changes until
// the gateway closes. The server exists.
func (b *bridge) start(debounceDelay time.Duration) {
	if b.res == nil {
		return
	}
	b.updates = make(chan string, maxPendingUpdates)
	b.stopped = make(chan struct{})
	go b.notify()
	b.refresh = debounce.New(debounceDelay, maxDebounceFactor*debounceDelay, b.sync)
	b.res.OnChange(b.scope, func(c resources.Change) {
		if c.Kind != resources.Updated {
			b.stale.Store(true)
			b.refresh.Trigger()
		}
	})
	b.sync()
}

// stop ends the notifier and the pending sync; Close calls it.
func (b *bridge) stop() {
	if b.res == nil || b.refresh == nil {
		return
	}
	b.refresh.Stop()
	<-b.stopped
}

// sync brings the server's resources, templates and prompts in line with
// the service.
func (b *bridge) sync() {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	b.syncLocked()
}

// syncLocked is sync's work; the caller holds syncMu.
func (b *bridge) syncLocked() {
	if b.g.ctx.Err() != nil {
		return
	}
	b.syncing.Store(true)
	defer b.syncing.Store(false)
	// Cleared first: a change from here on marks the lists stale again.
	b.stale.Store(false)
	b.syncResources()
	b.syncPrompts()
}

// behind reports whether the server's lists may lack a change the
// service announced: a sync is due, or running.
func (b *bridge) behind() bool { return b.stale.Load() || b.syncing.Load() }

// catchUp syncs, unless the lists are up to date by the time a sync
// running now ends.
func (b *bridge) catchUp() {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	if b.stale.Load() {
		b.syncLocked()
	}
}

// syncResources brings the server's resources and templates in line with
// the service's; a URI two servers list is served once, as the service
// reads it from the first. The caller holds syncMu.
func (b *bridge) syncResources() {
	var want []reconcile.Entry[string, *mcp.Resource]
	for _, r := range b.res.List(resources.Filter{}) {
		x := r.Resource
		want = append(want, reconcile.Entry[string, *mcp.Resource]{Key: r.URI, State: listing(r.Resource), Value: &x})
	}
	var wantT []reconcile.Entry[string, *mcp.ResourceTemplate]
	for _, t := range b.res.Templates(resources.Filter{}) {
		x := t.ResourceTemplate
		wantT = append(wantT, reconcile.Entry[string, *mcp.ResourceTemplate]{Key: t.URITemplate, State: listing(t.ResourceTemplate), Value: &x})
	}
	changed := b.resources.Sync(want).Changed()
	changed = b.templates.Sync(wantT).Changed() || changed
	if changed || b.g.lists.sig(listResources) == "" {
		// One kind for the sessions: resources and templates together.
		entries := make(map[string]string, len(want)+len(wantT))
		for uri, sig := range b.resources.Served() {
			entries["r "+uri] = sig
		}
		for u, sig := range b.templates.Served() {
			entries["t "+u] = sig
		}
		b.g.lists.setSig(listResources, signature(entries))
	}
}

// resourceSets are the served resources' and templates' reconcilers.
func (b *bridge) resourceSets() {
	changing := func() { b.g.lists.changing(listResources) }
	b.resources = reconcile.New(reconcile.Ops[string, *mcp.Resource]{
		Changing: changing,
		Remove:   func(uris ...string) { b.g.server.RemoveResources(uris...) },
		Add: func(e reconcile.Entry[string, *mcp.Resource]) error {
			err := guard(func() { b.g.server.AddResource(e.Value, b.read) })
			if err != nil {
				b.g.logger.Warn("gateway: resource not served", "uri", e.Key, "err", err)
			}
			return err
		},
	})
	b.templates = reconcile.New(reconcile.Ops[string, *mcp.ResourceTemplate]{
		Changing: changing,
		Remove:   func(uris ...string) { b.g.server.RemoveResourceTemplates(uris...) },
		Add: func(e reconcile.Entry[string, *mcp.ResourceTemplate]) error {
			err := guard(func() { b.g.server.AddResourceTemplate(e.Value, b.read) })
			if err != nil {
				b.g.logger.Warn("gateway: resource template not served", "template", e.Key, "err", err)
			}
			return err
		},
	})
}

// listing is an entry's identity: its JSON.
func listing(v any) string {
	j, err := json.Marshal(v)
	if err != nil {
		return "" // never equal to a served entry's: it is served again
	}
	return string(j)
}

// guard turns a panic of go-sdk on an entry it refuses (a URI that does not
// parse) into an error: entries come from third-party servers.
func guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("go-sdk refused it: " + fmt.Sprint(r))
		}
	}()
	f()
	return nil
}

// read reads a resource from the server that owns its URI (the service
// routes it: a listed URI, else a template's match), once the gate opens
// that server to the caller. The server's own error reaches the client.
func (b *bridge) read(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	owner, err := b.res.Owner(req.Params.URI)
	if err != nil {
		return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: err.Error()}
	}
	if err := b.gateDoor(req, owner, tools.KindResources, "resource "+req.Params.URI); err != nil {
		return nil, err
	}
	read := func(ctx context.Context, ch *tools.Channels) (*mcp.ReadResourceResult, error) {
		// From the server the gate opened, whatever routing says by now.
		res, err := b.res.ReadFrom(ctx, owner, req.Params.URI, ch)
		return res.ReadResourceResult, err
	}
	if !needsRoundTrip(req.Session) {
		res, err := read(ctx, forwardRequests(req.Session))
		if err != nil {
			return nil, wireError(err)
		}
		return res, nil
	}
	// The server may ask the client during the read: a round trip.
	out, ask, state, err := b.g.trips.roundTrip(b.g.ctx, ctx, "resources/read", req.Session, req.Params.RequestState, req.Params.InputResponses,
		func(ctx context.Context, ch *tools.Channels) (any, error) { return read(ctx, ch) })
	if ask != nil {
		return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{inputKey: ask}, RequestState: state}, nil
	}
	if err != nil {
		return nil, wireError(err)
	}
	res, _ := out.(*mcp.ReadResourceResult)
	return res, nil
}

// wireError keeps a server's JSON-RPC error (its code, such as resource not
// found) for the client; any other error goes as go-sdk sends it.
func wireError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return err
}

// subscribe follows a URI for a client session: the first session's
// subscription subscribes on the service, which asks the owning server.
func (b *bridge) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	owner, err := b.res.Owner(uri)
	if err != nil {
		return &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: err.Error()}
	}
	if err := b.gateDoor(req, owner, tools.KindResources, "resource "+uri); err != nil {
		return err
	}
	b.subMu.Lock()
	defer b.subMu.Unlock()
	b.pruneLocked()
	f := b.subs[uri]
	if f == nil {
		cancel, err := b.res.Subscribe(ctx, b.scope, uri, b.updated)
		if err != nil {
			return wireError(err)
		}
		f = &followed{cancel: cancel, sessions: map[*mcp.ServerSession]bool{}}
		b.subs[uri] = f
	}
	f.sessions[req.Session] = true
	return nil
}

// unsubscribe drops a session's subscription; the last one cancels the
// service's.
func (b *bridge) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	if f := b.subs[req.Params.URI]; f != nil {
		delete(f.sessions, req.Session)
	}
	b.pruneLocked()
	return nil
}

// pruneLocked drops the sessions that have ended (go-sdk forgets their
// subscriptions without calling unsubscribe) and cancels the subscriptions
// nobody holds any more.
func (b *bridge) pruneLocked() {
	live := map[*mcp.ServerSession]bool{}
	for ss := range b.g.server.Sessions() {
		live[ss] = true
	}
	for uri, f := range b.subs {
		for ss := range f.sessions {
			if !live[ss] {
				delete(f.sessions, ss)
			}
		}
		if len(f.sessions) == 0 {
			f.cancel()
			delete(b.subs, uri)
		}
	}
}

// updated queues a subscribed URI's update for the notifier; the service
// calls it on the server's goroutine, which must not wait for clients.
func (b *bridge) updated(uri string) {
	select {
	case b.updates <- uri:
	default:
		b.g.logger.Warn("gateway: resource update dropped: clients are not keeping up", "uri", uri)
	}
}

// notify sends queued updates to the sessions subscribed to them (go-sdk
// keeps which), until the gateway closes.
func (b *bridge) notify() {
	defer close(b.stopped)
	for {
		select {
		case <-b.g.ctx.Done():
			return
		case uri := <-b.updates:
			_ = b.g.server.ResourceUpdated(b.g.ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}

// complete answers completion/complete for a prompt's argument (by its
// served name) or a template's, from the server that lists it. A server
// that does not complete gives no values, as a server with nothing to
// offer would.
func (b *bridge) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	ref := *p.Ref
	var server, kind, what string
	switch ref.Type {
	case "ref/prompt":
		pr, ok := b.lookupPrompt(ref.Name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt " + strconv.Quote(ref.Name)}
		}
		what = "prompt " + ref.Name
		server, kind, ref.Name = pr.Server, tools.KindPrompts, pr.Name
	case "ref/resource":
		templates := b.res.Templates(resources.Filter{})
		i := slices.IndexFunc(templates, func(t resources.Template) bool { return t.URITemplate == ref.URI })
		if i < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown resource template " + strconv.Quote(ref.URI)}
		}
		server, kind, what = templates[i].Server, tools.KindResources, "resource template "+ref.URI
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown reference type " + strconv.Quote(ref.Type)}
	}
	if err := b.gateDoor(req, server, kind, what); err != nil {
		return nil, err
	}
	creq := resources.CompleteRequest{Ref: ref, Argument: p.Argument.Name, Value: p.Argument.Value}
	if p.Context != nil {
		creq.Context = p.Context.Arguments
	}
	values, err := b.res.Complete(ctx, server, creq)
	if errors.Is(err, resources.ErrNoCompletion) {
		values, err = nil, nil
	}
	if err != nil {
		return nil, wireError(err)
	}
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values}}
	if out.Completion.Values == nil {
		out.Completion.Values = []string{}
	}
	// MCP caps a completion at 100 values.
	if len(values) > maxCompletionValues {
		out.Completion.Values = values[:maxCompletionValues]
		out.Completion.Total = len(values)
		out.Completion.HasMore = true
	}
	return out, nil
}

const maxCompletionValues = 100

// StartupWait bounds how long after the gateway's start a client's
// initialize waits for the MCP servers connecting with it (eager ones)
// to be listed, so that the first lists and the instructions have them. A
// lazy server waits for its first call and is not waited for; past the
// bound, a server still connecting comes with a list_changed. Clients give
// a server well under a second to answer (Codex drops one past 0.5-1 s).
const StartupWait = 300 * time.Millisecond

// startup holds a client's initialize, in the gateway's first moments, until
// the servers connecting with it are listed or StartupWait has passed;
// the tools follow from upToDate. A request that lists resources or
// prompts (initialize included) is answered from lists that have every
// change the service announced before it, as upToDate does for tools.
//
// The capabilities do not depend on it: with the resources service,
// resources (with subscribe), prompts and completion are advertised from
// the start, since a server that offers them may come at any time, and a
// client reads capabilities only once.
func (b *bridge) startup(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if b.res == nil {
			return next(ctx, method, req)
		}
		switch method {
		case "initialize", "server/discover":
			if until := b.born.Add(StartupWait); time.Now().Before(until) {
				wctx, cancel := context.WithDeadline(ctx, until)
				_ = b.res.WaitListed(wctx) // past the bound, what is listed
				cancel()
			}
			fallthrough
		case "prompts/list", "resources/list", "resources/templates/list":
			if b.behind() {
				b.catchUp()
			}
		}
		return next(ctx, method, req)
	}
}
