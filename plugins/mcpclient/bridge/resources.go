package bridge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Kind says what to re-sync besides tools.
type Kind uint8

const (
	Resources Kind = 1 << iota
	Prompts
)

// Bridge is one instance's resources, prompts and completion: what the
// server lists, published on the resources and commands services, and the
// requests those services make of the server. The supervisor owns prompts
// and promptSig (Sync, Clear); the rest is guarded by mu.
type Bridge struct {
	opt  Options
	link Link
	sync chan struct{} // coalesced re-sync signal, cap 1

	mu      sync.Mutex
	pending Kind
	target  Conn
	source  *resources.Source
	subs    map[string]bool // URIs subscribed through the service
	cut     map[string]bool // the lists maxListed cut, logged once each

	prompts   []func() // removes the current prompt commands
	promptSig string
}

// register makes the instance a provider of the resources service, before
// the first connection. The provider goes away with the scope.
func (b *Bridge) register() error {
	b.sync = make(chan struct{}, 1)
	b.subs = map[string]bool{}
	reg := b.opt.Resources
	if reg == nil {
		return nil
	}
	src, err := reg.Register(b.opt.Scope, resources.Provider{
		Server:      b.opt.Server,
		Read:        b.Read,
		Subscribe:   b.Subscribe,
		Unsubscribe: b.Unsubscribe,
		Complete:    b.Complete,
		GetPrompt:   b.GetPrompt,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", b.opt.Label, err)
	}
	b.source = src
	return nil
}

// Changed queues a re-sync of what for cn; a stale connection's
// notification is dropped by the supervisor.
func (b *Bridge) Changed(cn Conn, what Kind) {
	b.mu.Lock()
	if b.target != cn {
		b.pending = 0
	}
	b.target = cn
	b.pending |= what
	b.mu.Unlock()
	select {
	case b.sync <- struct{}{}:
	default:
	}
}

// Updated handles notifications/resources/updated: subscribers of
// the URI hear of it, and the listing is re-synced (a size or type may have
// changed). An update for a URI nobody subscribed is ignored.
func (b *Bridge) Updated(cn Conn, req *mcp.ResourceUpdatedNotificationRequest) {
	if req == nil || req.Params == nil {
		return
	}
	uri := req.Params.URI
	b.mu.Lock()
	subscribed := b.subs[uri]
	src := b.source
	b.mu.Unlock()
	if !subscribed || src == nil {
		return
	}
	src.Updated(uri)
	b.Changed(cn, Resources)
}

// Queued returns the connection and the kinds a Changed queued since the
// last call (nil, 0 for none): the supervisor syncs them when the
// connection is still its current one.
func (b *Bridge) Queued() (Conn, Kind) {
	b.mu.Lock()
	defer b.mu.Unlock()
	target, what := b.target, b.pending
	b.target, b.pending = nil, 0
	return target, what
}

// SyncC is signalled when Changed queued a re-sync.
func (b *Bridge) SyncC() <-chan struct{} { return b.sync }

// Subscribed reports whether someone follows a resource of the server
// (the server is in use then, whatever its calls).
func (b *Bridge) Subscribed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

// Sync lists what the server offers besides tools, as its
// capabilities say, and publishes it. connected is true right after a
// connection was made: subscriptions are then renewed on it. A failed list
// keeps what was published before.
func (b *Bridge) Sync(ctx context.Context, cn Conn, what Kind, connected bool) {
	lctx, cancel := context.WithTimeout(ctx, b.opt.ListTimeout)
	defer cancel()
	caps := capabilities(cn)
	if what&Resources != 0 && b.source != nil {
		// The URIs to renew, taken before Set: a URI the service hands
		// over in Set (followed before this instance existed) is
		// subscribed there.
		b.mu.Lock()
		renew := slices.Sorted(maps.Keys(b.subs))
		b.mu.Unlock()
		if caps.Resources == nil {
			b.source.Set(nil, nil)
		} else if list, templates, err := listResources(lctx, cn.Session(), b.listCut); err != nil {
			b.failed(ctx, cn, "resources", err)
		} else {
			b.source.Set(list, templates)
		}
		if connected && caps.Resources != nil && caps.Resources.Subscribe {
			b.renewSubscriptions(lctx, cn, renew)
		}
	}
	if what&Prompts != 0 && (b.opt.Commands != nil || b.source != nil) {
		if caps.Prompts == nil {
			b.publishPrompts(nil)
		} else if list, err := listPrompts(lctx, cn.Session(), b.listCut); err != nil {
			b.failed(ctx, cn, "prompts", err)
		} else {
			b.publishPrompts(list)
		}
	}
	if connected && b.source != nil {
		b.source.Listed()
	}
}

// maxParallelRenewals bounds the subscribes a new connection renews at once.
const maxParallelRenewals = 8

// renewSubscriptions subscribes on a new connection to what was followed
// on the last: several at a time, all under ctx's one deadline, so that
// the supervisor (connecting) waits one bound however many there are.
func (b *Bridge) renewSubscriptions(ctx context.Context, cn Conn, uris []string) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelRenewals)
	for _, uri := range uris {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := cn.Session().Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				b.opt.Log.Warn(b.opt.Label+": renewing a resource subscription failed", "uri", uri, "err", err)
			}
		}()
	}
	wg.Wait()
}

// maxListed bounds each list of resources, templates or prompts taken
// from a server: one that lists without end must not grow the host's
// memory and every listing built from it.
const maxListed = 10_000

// listCut logs, once per instance and list, that maxListed cut method's
// list.
func (b *Bridge) listCut(method string) {
	b.mu.Lock()
	first := !b.cut[method]
	if b.cut == nil {
		b.cut = map[string]bool{}
	}
	b.cut[method] = true
	b.mu.Unlock()
	if first {
		b.opt.Log.Warn(fmt.Sprintf("%s: the server lists more than %d entries in %s; the rest are left out", b.opt.Label, maxListed, method))
	}
}

// failed logs a failed list, unless the connection or the instance is
// ending anyway.
func (b *Bridge) failed(ctx context.Context, cn Conn, what string, err error) {
	select {
	case <-cn.Closed():
		return
	default:
	}
	if ctx.Err() == nil {
		b.opt.Log.Error(b.opt.Label+": listing "+what+" failed; keeping the previous ones", "err", err)
	}
}

// Dormant says the server waits for its first call to start (a lazy
// server started from its catalog cache): its resources and prompts are
// listed then, and nobody waiting for the servers starting now
// (resources.Registry.WaitListed, a gateway's first client) should wait
// for it.
func (b *Bridge) Dormant() {
	if b.source != nil {
		b.source.Listed()
	}
}

// Clear withdraws resources and prompts (the client gave up).
func (b *Bridge) Clear() {
	if b.source != nil {
		b.source.Set(nil, nil)
		b.source.Listed()
	}
	b.publishPrompts(nil)
}

// capabilities returns the server's capabilities, never nil.
func capabilities(cn Conn) *mcp.ServerCapabilities {
	if res := cn.Session().InitializeResult(); res != nil && res.Capabilities != nil {
		return res.Capabilities
	}
	return &mcp.ServerCapabilities{}
}

// listResources drains resources/list and resources/templates/list, each
// up to maxListed entries (cut is told of a list cut there). A server that
// advertises resources but does not know the templates method has no
// templates. A repeated cursor makes the list invalid.
func listResources(ctx context.Context, s *mcp.ClientSession, cut func(method string)) ([]*mcp.Resource, []*mcp.ResourceTemplate, error) {
	var list []*mcp.Resource
	seen := map[string]bool{}
	err := paginate("resources/list", func(cursor string) (string, error) {
		res, err := s.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, r := range res.Resources {
			if r == nil || seen[r.URI] {
				continue // a duplicate adds nothing to route by
			}
			if len(list) == maxListed {
				cut("resources/list")
				return "", nil
			}
			seen[r.URI] = true
			list = append(list, r)
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list resources: %w", err)
	}
	var templates []*mcp.ResourceTemplate
	err = paginate("resources/templates/list", func(cursor string) (string, error) {
		res, err := s.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, t := range res.ResourceTemplates {
			if t == nil {
				continue
			}
			if len(templates) == maxListed {
				cut("resources/templates/list")
				return "", nil
			}
			templates = append(templates, t)
		}
		return res.NextCursor, nil
	})
	if err != nil && !methodNotFound(err) {
		return nil, nil, fmt.Errorf("list resource templates: %w", err)
	}
	return list, templates, nil
}

// paginate calls page with each cursor until one returns no next cursor;
// a cursor the server already returned is an error (it would loop).
func paginate(method string, page func(cursor string) (next string, err error)) error {
	cursors := map[string]bool{}
	cursor := ""
	for {
		next, err := page(cursor)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if cursors[next] {
			return fmt.Errorf("server repeated the %s cursor %q", method, next)
		}
		cursors[next] = true
		cursor = next
	}
}

func methodNotFound(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound
}

// Read reads uri from the live connection, bounded by
// toolCallTimeoutMs like a tool call.
func (b *Bridge) Read(ctx context.Context, uri string, ch *tools.Channels) (*mcp.ReadResourceResult, error) {
	cn, done, err := b.link.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if capabilities(cn).Resources == nil {
		return nil, fmt.Errorf("%s: the server offers no resources", b.opt.Label)
	}
	rctx, cancel := context.WithTimeout(requestContext(ctx, ch), b.opt.RequestTimeout)
	res, err := cn.Session().ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
	b.link.Release(cancel, err)
	if err != nil {
		return nil, b.requestError(ctx, rctx, cn, "read "+uri, err)
	}
	return res, nil
}

// requestError explains a failed request other than a tool call, as
// callError does for calls.
func (b *Bridge) requestError(ctx, rctx context.Context, cn Conn, what string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %s: %w", b.opt.Label, what, ctx.Err())
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: %s: no answer within toolCallTimeoutMs (%dms): %w", b.opt.Label, what, b.opt.RequestTimeout.Milliseconds(), context.DeadlineExceeded)
	case Answered(err):
		return fmt.Errorf("%s: %s: the server answered with an error: %w", b.opt.Label, what, err)
	}
	b.link.Probe(cn)
	return fmt.Errorf("%s: %s failed: %w", b.opt.Label, what, err)
}

// Subscribe follows uri on the server; the subscription is renewed on
// every new connection until unsubscribe.
func (b *Bridge) Subscribe(ctx context.Context, uri string) error {
	cn, done, err := b.link.Acquire(ctx)
	if err != nil {
		return err
	}
	defer done()
	if caps := capabilities(cn); caps.Resources == nil || !caps.Resources.Subscribe {
		return fmt.Errorf("%s: %w", b.opt.Label, resources.ErrNoSubscribe)
	}
	b.mu.Lock()
	b.subs[uri] = true
	b.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, b.opt.RequestTimeout)
	defer cancel()
	if err := cn.Session().Subscribe(sctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		b.mu.Lock()
		delete(b.subs, uri)
		b.mu.Unlock()
		return b.requestError(ctx, sctx, cn, "subscribe "+uri, err)
	}
	return nil
}

// Unsubscribe stops following uri, bounded by toolCallTimeoutMs like
// every request (a server that never answers must not hold the caller).
func (b *Bridge) Unsubscribe(ctx context.Context, uri string) error {
	b.mu.Lock()
	delete(b.subs, uri)
	b.mu.Unlock()
	cn, err := b.link.Current()
	if err != nil {
		return nil // the next connection does not renew it
	}
	uctx, cancel := context.WithTimeout(ctx, b.opt.RequestTimeout)
	defer cancel()
	return cn.Session().Unsubscribe(uctx, &mcp.UnsubscribeParams{URI: uri})
}

// Complete asks the server for an argument's values (completion/complete).
func (b *Bridge) Complete(ctx context.Context, req resources.CompleteRequest) ([]string, error) {
	cn, done, err := b.link.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if capabilities(cn).Completions == nil {
		return nil, fmt.Errorf("%s: %w", b.opt.Label, resources.ErrNoCompletion)
	}
	cctx, cancel := context.WithTimeout(ctx, b.opt.RequestTimeout)
	ref := req.Ref
	params := &mcp.CompleteParams{Ref: &ref, Argument: mcp.CompleteParamsArgument{Name: req.Argument, Value: req.Value}}
	if len(req.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.Context}
	}
	res, err := cn.Session().Complete(cctx, params)
	b.link.Release(cancel, err)
	if err != nil {
		return nil, b.requestError(ctx, cctx, cn, "complete "+req.Argument, err)
	}
	return res.Completion.Values, nil
}
