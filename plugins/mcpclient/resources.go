package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/resources"
)

// extraServices are the optional services beyond tools that a client feeds:
// the server's resources and templates go to the resources service, its
// prompts become slash commands.
type extraServices struct {
	resources *resources.Registry // nil when the service is not there
	commands  *commands.Registry  // nil when the service is not there
}

// extraDeps are the services of extraServices, both optional.
var extraDeps = []host.Dep{host.Optional(resources.Key), host.Optional(commands.Key)}

// lookupExtras returns the extra services injected in s.
func lookupExtras(s *host.Scope) extraServices {
	var e extraServices
	e.resources, _ = host.Lookup(s, resources.Key)
	e.commands, _ = host.Lookup(s, commands.Key)
	return e
}

// extraKind says what to re-sync besides tools.
type extraKind uint8

const (
	syncResources extraKind = 1 << iota
	syncPrompts
)

// extras is a client's state for resources and prompts. The supervisor
// (run) owns prompts and promptSig; the rest is guarded by mu.
type extras struct {
	sync chan struct{} // coalesced re-sync signal, cap 1

	mu      sync.Mutex
	pending extraKind
	target  *conn
	source  *resources.Source
	subs    map[string]bool // URIs subscribed through the service
	cut     map[string]bool // the lists maxListed cut, logged once each

	prompts   []func() // removes the current prompt commands
	promptSig string
}

// startExtras registers the client as a provider of the resources service,
// before the first connection. The provider goes away with the scope.
func (c *client) startExtras() error {
	c.ext.sync = make(chan struct{}, 1)
	c.ext.subs = map[string]bool{}
	reg := c.opt.extra.resources
	if reg == nil {
		return nil
	}
	src, err := reg.Register(c.opt.scope, resources.Provider{
		Server:      c.cfg.ServerName,
		Read:        c.readResource,
		Subscribe:   c.subscribe,
		Unsubscribe: c.unsubscribe,
		Complete:    c.complete,
		GetPrompt:   c.getPrompt,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", c.label, err)
	}
	c.ext.source = src
	return nil
}

// extraChanged queues a re-sync of what for cn; a stale connection's
// notification is dropped by the supervisor.
func (c *client) extraChanged(cn *conn, what extraKind) {
	c.ext.mu.Lock()
	if c.ext.target != cn {
		c.ext.pending = 0
	}
	c.ext.target = cn
	c.ext.pending |= what
	c.ext.mu.Unlock()
	select {
	case c.ext.sync <- struct{}{}:
	default:
	}
}

// resourceUpdated handles notifications/resources/updated: subscribers of
// the URI hear of it, and the listing is re-synced (a size or type may have
// changed). An update for a URI nobody subscribed is ignored.
func (c *client) resourceUpdated(cn *conn, req *mcp.ResourceUpdatedNotificationRequest) {
	if req == nil || req.Params == nil {
		return
	}
	uri := req.Params.URI
	c.ext.mu.Lock()
	subscribed := c.ext.subs[uri]
	src := c.ext.source
	c.ext.mu.Unlock()
	if !subscribed || src == nil {
		return
	}
	src.Updated(uri)
	c.extraChanged(cn, syncResources)
}

// resyncExtras runs a queued re-sync on the supervisor.
func (c *client) resyncExtras(ctx context.Context) {
	c.ext.mu.Lock()
	target, what := c.ext.target, c.ext.pending
	c.ext.target, c.ext.pending = nil, 0
	c.ext.mu.Unlock()
	if target == nil || target != c.conn || c.halted || what == 0 {
		return
	}
	c.syncExtras(ctx, target, what, false)
}

// syncExtras lists what the server offers besides tools, as its
// capabilities say, and publishes it. connected is true right after a
// connection was made: subscriptions are then renewed on it. A failed list
// keeps what was published before.
func (c *client) syncExtras(ctx context.Context, cn *conn, what extraKind, connected bool) {
	lctx, cancel := context.WithTimeout(ctx, ms(c.cfg.StartupTimeoutMs))
	defer cancel()
	caps := capabilities(cn)
	if what&syncResources != 0 && c.ext.source != nil {
		// The URIs to renew, taken before Set: a URI the service hands
		// over in Set (followed before this instance existed) is
		// subscribed there.
		c.ext.mu.Lock()
		renew := slices.Sorted(maps.Keys(c.ext.subs))
		c.ext.mu.Unlock()
		if caps.Resources == nil {
			c.ext.source.Set(nil, nil)
		} else if list, templates, err := listResources(lctx, cn.session, c.listCut); err != nil {
			c.extraFailed(ctx, cn, "resources", err)
		} else {
			c.ext.source.Set(list, templates)
		}
		if connected && caps.Resources != nil && caps.Resources.Subscribe {
			c.renewSubscriptions(lctx, cn, renew)
		}
	}
	if what&syncPrompts != 0 && (c.opt.extra.commands != nil || c.ext.source != nil) {
		if caps.Prompts == nil {
			c.publishPrompts(nil)
		} else if list, err := listPrompts(lctx, cn.session, c.listCut); err != nil {
			c.extraFailed(ctx, cn, "prompts", err)
		} else {
			c.publishPrompts(list)
		}
	}
	if connected && c.ext.source != nil {
		c.ext.source.Listed()
	}
}

// maxParallelRenewals bounds the subscribes a new connection renews at once.
const maxParallelRenewals = 8

// renewSubscriptions subscribes on a new connection to what was followed
// on the last: several at a time, all under ctx's one deadline, so that
// the supervisor (connecting) waits one bound however many there are.
func (c *client) renewSubscriptions(ctx context.Context, cn *conn, uris []string) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelRenewals)
	for _, uri := range uris {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := cn.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				c.log.Warn(c.label+": renewing a resource subscription failed", "uri", uri, "err", err)
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
func (c *client) listCut(method string) {
	c.ext.mu.Lock()
	first := !c.ext.cut[method]
	if c.ext.cut == nil {
		c.ext.cut = map[string]bool{}
	}
	c.ext.cut[method] = true
	c.ext.mu.Unlock()
	if first {
		c.log.Warn(fmt.Sprintf("%s: the server lists more than %d entries in %s; the rest are left out", c.label, maxListed, method))
	}
}

// extraFailed logs a failed list, unless the connection or the instance is
// ending anyway.
func (c *client) extraFailed(ctx context.Context, cn *conn, what string, err error) {
	select {
	case <-cn.closed:
		return
	default:
	}
	if ctx.Err() == nil {
		c.log.Error(c.label+": listing "+what+" failed; keeping the previous ones", "err", err)
	}
}

// clearExtras withdraws resources and prompts (the client gave up).
func (c *client) clearExtras() {
	if c.ext.source != nil {
		c.ext.source.Set(nil, nil)
		c.ext.source.Listed()
	}
	c.publishPrompts(nil)
}

// capabilities returns the server's capabilities, never nil.
func capabilities(cn *conn) *mcp.ServerCapabilities {
	if res := cn.session.InitializeResult(); res != nil && res.Capabilities != nil {
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

// readResource reads uri from the live connection, bounded by
// toolCallTimeoutMs like a tool call.
func (c *client) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	cn, done, err := c.acquire(ctx, "")
	if err != nil {
		return nil, err
	}
	defer done()
	if capabilities(cn).Resources == nil {
		return nil, fmt.Errorf("%s: the server offers no resources", c.label)
	}
	rctx, cancel := context.WithTimeout(ctx, ms(c.cfg.ToolCallTimeoutMs))
	res, err := cn.session.ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
	c.release(cancel, err)
	if err != nil {
		return nil, c.requestError(ctx, rctx, cn, "read "+uri, err)
	}
	return res, nil
}

// requestError explains a failed request other than a tool call, as
// callError does for calls.
func (c *client) requestError(ctx, rctx context.Context, cn *conn, what string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %s: %w", c.label, what, ctx.Err())
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: %s: no answer within toolCallTimeoutMs (%dms): %w", c.label, what, c.cfg.ToolCallTimeoutMs, context.DeadlineExceeded)
	case answered(err):
		return fmt.Errorf("%s: %s: the server answered with an error: %w", c.label, what, err)
	}
	c.requestProbe(cn)
	return fmt.Errorf("%s: %s failed: %w", c.label, what, err)
}

// subscribe follows uri on the server; the subscription is renewed on
// every new connection until unsubscribe.
func (c *client) subscribe(ctx context.Context, uri string) error {
	cn, done, err := c.acquire(ctx, "")
	if err != nil {
		return err
	}
	defer done()
	if caps := capabilities(cn); caps.Resources == nil || !caps.Resources.Subscribe {
		return fmt.Errorf("%s: %w", c.label, resources.ErrNoSubscribe)
	}
	c.ext.mu.Lock()
	c.ext.subs[uri] = true
	c.ext.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, ms(c.cfg.ToolCallTimeoutMs))
	defer cancel()
	if err := cn.session.Subscribe(sctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		c.ext.mu.Lock()
		delete(c.ext.subs, uri)
		c.ext.mu.Unlock()
		return c.requestError(ctx, sctx, cn, "subscribe "+uri, err)
	}
	return nil
}

// unsubscribe stops following uri, bounded by toolCallTimeoutMs like
// every request (a server that never answers must not hold the caller).
func (c *client) unsubscribe(ctx context.Context, uri string) error {
	c.ext.mu.Lock()
	delete(c.ext.subs, uri)
	c.ext.mu.Unlock()
	cn, err := c.current()
	if err != nil {
		return nil // the next connection does not renew it
	}
	uctx, cancel := context.WithTimeout(ctx, ms(c.cfg.ToolCallTimeoutMs))
	defer cancel()
	return cn.session.Unsubscribe(uctx, &mcp.UnsubscribeParams{URI: uri})
}

// complete asks the server for an argument's values (completion/complete).
func (c *client) complete(ctx context.Context, req resources.CompleteRequest) ([]string, error) {
	cn, done, err := c.acquire(ctx, "")
	if err != nil {
		return nil, err
	}
	defer done()
	if capabilities(cn).Completions == nil {
		return nil, fmt.Errorf("%s: %w", c.label, resources.ErrNoCompletion)
	}
	cctx, cancel := context.WithTimeout(ctx, ms(c.cfg.ToolCallTimeoutMs))
	ref := req.Ref
	params := &mcp.CompleteParams{Ref: &ref, Argument: mcp.CompleteParamsArgument{Name: req.Argument, Value: req.Value}}
	if len(req.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.Context}
	}
	res, err := cn.session.Complete(cctx, params)
	c.release(cancel, err)
	if err != nil {
		return nil, c.requestError(ctx, cctx, cn, "complete "+req.Argument, err)
	}
	return res.Completion.Values, nil
}
