// Package resources is the resources service: what MCP servers offer to be
// read (resources and resource templates), gathered from every server and
// offered to the rest of the host. The tool registry stays about tools.
//
// # Providers
//
// Each mcp-client instance registers one [Provider] on its scope with
// [Registry.Register] and keeps the [Source] it gets back up to date
// ([Source.Set]) after each list and re-sync; the provider goes away with
// the scope. A provider names its server and says how to read a URI, and,
// where the server supports them, how to subscribe and how to complete a
// template's arguments.
//
// # Consumers
//
// Front ends, the model-facing tools and the gateway ask the
// registry: [Registry.List] and [Registry.Templates] filter by server and
// query, [Registry.Read] routes a URI to the server that owns it,
// [Registry.Expand] turns a template and its arguments into a URI,
// [Registry.Complete] asks a server to complete an argument,
// [Registry.Subscribe] follows a resource's updates and [Registry.OnChange]
// follows every change of the lists (a gateway's list_changed).
//
// A URI listed by two servers or more is read from the one whose entry
// comes first in the composition (the collision is logged once, naming
// that server and the shadowed ones, and again when one more lists it);
// providers of no composition entry come after, in registration order.
// Routing never depends on which instance started first. A URI no server
// lists goes to the server whose template matches it, and otherwise to the
// only server when there is one.
//
// # Prompts
//
// A provider publishes its server's prompts too ([Source.SetPrompts]), with
// the name each goes by in the host (mcp__<server>__<prompt>, like tools);
// mcp-client feeds the same listing to its slash commands. [Registry.Prompts]
// lists them and [Registry.GetPrompt] gets one from its server, messages as
// the server sent them: the gateway serves them to its clients.
// [Source.Listed] and [Registry.WaitListed] let a gateway's first client
// see what the servers starting with it offer.
//
// A plugin that is no MCP client offers resources and prompts the same
// way: it registers a Provider named after its instance id, and
// [PromptCommand] makes each of its prompts a slash command as a server's
// becomes one.
//
// # The built-in plugin
//
// The `resources` plugin provides the service and, when the tool registry is
// there, registers two model-facing tools with constant schemas, in the
// fold's spirit: mcp_resources (list or search resources and templates
// across servers) and mcp_read (read a URI or expand a template). With the
// commands service it adds /resources and /read. Text comes back inline;
// images go through the attachment store as durable references; other
// binary content is stored as a blob and described by MIME type and size.
package resources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Key is the resources service.
var Key = host.NewKey[*Registry]("resources")

// Resource is one resource a server lists.
type Resource struct {
	Server string `json:"server"`
	mcp.Resource
}

// Template is one resource template a server lists.
type Template struct {
	Server string `json:"server"`
	mcp.ResourceTemplate
}

// Provider is one server's side of the service.
type Provider struct {
	// Server is the server's name (unique in a host).
	Server string
	// Read reads uri from the server; ch are the reader's back-channels
	// (who answers the server's questions during the read; nil: none).
	Read func(ctx context.Context, uri string, ch *tools.Channels) (*mcp.ReadResourceResult, error)
	// Subscribe and Unsubscribe follow a resource's updates; nil when the
	// server does not support subscriptions. The provider reports updates
	// with Source.Updated.
	Subscribe   func(ctx context.Context, uri string) error
	Unsubscribe func(ctx context.Context, uri string) error
	// Complete asks the server for values of one argument of a template or
	// prompt; nil when the server does not offer completion.
	Complete func(ctx context.Context, req CompleteRequest) ([]string, error)
	// GetPrompt gets one of the server's prompts (by the server's own
	// name) with its arguments, ch the caller's back-channels as Read's;
	// nil when the provider publishes no prompts.
	GetPrompt func(ctx context.Context, name string, args map[string]string, ch *tools.Channels) (*mcp.GetPromptResult, error)
}

// CompleteRequest asks for the values of one argument.
type CompleteRequest struct {
	// Ref is what the argument belongs to: a template
	// ({Type: "ref/resource", URI: template}) or a prompt
	// ({Type: "ref/prompt", Name: prompt}).
	Ref mcp.CompleteReference
	// Argument is the argument's name, Value what is typed so far.
	Argument, Value string
	// Context holds the arguments already given.
	Context map[string]string
}

// Filter narrows a listing.
type Filter struct {
	// Server keeps one server's entries; empty keeps all.
	Server string
	// Query keeps entries whose URI, name, title, description or MIME type
	// contain every word of it, ignoring case; empty keeps all.
	Query string
}

// ChangeKind says what changed.
type ChangeKind int

const (
	// ListChanged: a server's resources or templates changed, or a server
	// came or went.
	ListChanged ChangeKind = iota + 1
	// Updated: a subscribed resource's content changed.
	Updated
	// PromptsChanged: a server's prompts changed, or a server with prompts
	// came or went.
	PromptsChanged
)

// Change is one change: the server, and the URI for Updated.
type Change struct {
	Kind   ChangeKind
	Server string
	URI    string
}

// ReadResult is a read's outcome with the server that answered.
type ReadResult struct {
	Server string
	*mcp.ReadResourceResult
}

// Registry holds the providers. It is safe for concurrent use.
type Registry struct {
	log *slog.Logger

	mu        sync.RWMutex
	sources   []*Source // registration order; routingLocked sorts them
	subs      map[string][]*subscriber
	held      map[string]*Source         // the source each followed URI is subscribed on
	pending   map[string]*firstSubscribe // URIs whose first subscribe is in flight
	collision map[string]int             // each shared URI's number of servers when last logged

	changes *host.Event[Change]
	// wake is closed and replaced when a source lists for the first time
	// or goes (WaitListed).
	wake chan struct{}
}

// Source is a registered provider; its owner keeps its lists current.
type Source struct {
	r         *Registry
	p         Provider
	position  func() int // its instance's place in the composition (host.Scope.Position)
	resources []Resource
	templates []parsedTemplate
	sig       string
	removed   bool
	// scope is the registering instance's; staged holds while that
	// instance starts beside the one it replaces (stage.go).
	scope     *host.Scope
	staged    bool
	prompts   []Prompt
	promptSig string
	listed    bool // Listed was called
}

type parsedTemplate struct {
	Template
	tmpl *uritemplate.Template // nil when the template does not parse
}

type subscriber struct {
	fn func(uri string)
}

// firstSubscribe is a provider Subscribe in flight for a URI's first
// subscriber: others for the URI wait for it rather than count on a
// subscription that may fail.
type firstSubscribe struct {
	done chan struct{}
	err  error // set before done closes
	// ownCtx: the failure was the first subscriber's own context
	// ending, which says nothing of the server: a waiter tries itself.
	ownCtx bool
}

// Options configure a Registry.
type Options struct {
	Logger *slog.Logger
}

// New returns an empty registry.
func New(opts *Options) *Registry {
	r := &Registry{log: slog.Default(), subs: map[string][]*subscriber{}, held: map[string]*Source{}, pending: map[string]*firstSubscribe{}, collision: map[string]int{},
		changes: host.NewEvent[Change]("resources change"), wake: make(chan struct{})}
	if opts != nil && opts.Logger != nil {
		r.log = opts.Logger
	}
	return r
}

// ErrUnknownServer marks a server no provider is registered for.
var ErrUnknownServer = errors.New("unknown server")

// ErrNoOwner marks a URI no server lists or matches.
var ErrNoOwner = errors.New("no server offers this URI")

// Register adds p on behalf of the instance whose scope is s, until s is
// disposed (or remove is called). A server registered twice is an error. A
// nil s panics.
func (r *Registry) Register(s *host.Scope, p Provider) (*Source, error) {
	if s == nil {
		panic("resources: Register needs the registering plugin's *host.Scope, got nil (in a test, use host.NewScope)")
	}
	if p.Server == "" || p.Read == nil {
		return nil, errors.New("resources: a provider needs a Server and a Read")
	}
	src := &Source{r: r, p: p, scope: s, position: s.Position}
	r.mu.Lock()
	if s.Staged() {
		return r.stage(s, src) // unlocks
	}
	for _, o := range r.sources {
		if o.p.Server == p.Server {
			r.mu.Unlock()
			return nil, fmt.Errorf("resources: server %q is already registered", p.Server)
		}
	}
	r.sources = append(r.sources, src)
	r.mu.Unlock()
	s.Effect("resources provider "+p.Server, src.remove)
	return src, nil
}

// remove takes src out, when its instance is disposed.
func (src *Source) remove() {
	r, p := src.r, src.p
	r.mu.Lock()
	if src.removed || src.staged {
		// Replaced by a newer instance's source, or never live.
		src.removed = true
		r.mu.Unlock()
		return
	}
	src.removed = true
	had := len(src.resources)+len(src.templates) > 0
	hadPrompts := len(src.prompts) > 0
	r.sources = slices.DeleteFunc(r.sources, func(o *Source) bool { return o == src })
	// Its subscriptions went with the server; a provider that lists these
	// URIs later takes them up (Set).
	maps.DeleteFunc(r.held, func(_ string, h *Source) bool { return h == src })
	r.wakeLocked()
	r.mu.Unlock()
	if had {
		r.emit(Change{Kind: ListChanged, Server: p.Server})
	}
	if hadPrompts {
		r.emit(Change{Kind: PromptsChanged, Server: p.Server})
	}
}

// Set replaces the source's resources and templates. An unchanged set
// announces nothing.
func (src *Source) Set(resources []*mcp.Resource, templates []*mcp.ResourceTemplate) {
	r := src.r
	rs := make([]Resource, 0, len(resources))
	for _, x := range resources {
		if x != nil {
			rs = append(rs, Resource{Server: src.p.Server, Resource: *x})
		}
	}
	ts := make([]parsedTemplate, 0, len(templates))
	for _, x := range templates {
		if x == nil {
			continue
		}
		t := parsedTemplate{Template: Template{Server: src.p.Server, ResourceTemplate: *x}}
		if parsed, err := uritemplate.New(x.URITemplate); err == nil {
			t.tmpl = parsed
		} else {
			r.log.Warn("resources: a template does not parse; it is listed but matches no URI", "server", src.p.Server, "template", x.URITemplate, "err", err)
		}
		ts = append(ts, t)
	}
	sig := signature(rs, ts)
	r.mu.Lock()
	if src.removed || sig == src.sig {
		r.mu.Unlock()
		return
	}
	src.resources, src.templates, src.sig = rs, ts, sig
	if src.staged {
		r.mu.Unlock() // announced when it goes live
		return
	}
	r.logCollisionsLocked(src)
	adopt := r.adoptLocked(src)
	r.mu.Unlock()
	r.emit(Change{Kind: ListChanged, Server: src.p.Server})
	r.resubscribe(src, adopt)
}

// adoptLocked returns the followed URIs that no server holds a
// subscription for and that src now owns (its instance came back, or it
// lists them now), marking them held by src.
func (r *Registry) adoptLocked(src *Source) []string {
	if src.p.Subscribe == nil {
		return nil
	}
	var out []string
	for uri := range r.subs {
		if r.held[uri] != nil {
			continue
		}
		if owner, err := r.ownerLocked(uri); err == nil && owner == src {
			r.held[uri] = src
			out = append(out, uri)
		}
	}
	slices.Sort(out)
	return out
}

// maxParallelSubscribes bounds the subscribes resubscribe sends at once.
const maxParallelSubscribes = 8

// resubscribe subscribes on src for followers who were there before it:
// several URIs at a time and all within one unsubscribeTimeout, so that
// Set's caller (an instance's supervisor, connecting) waits for one bound
// rather than one per URI.
func (r *Registry) resubscribe(src *Source, uris []string) {
	if len(uris) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelSubscribes)
	for _, uri := range uris {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := src.p.Subscribe(ctx, uri); err != nil {
				r.log.Warn("resources: taking up a subscription failed; its followers get no updates", "server", src.p.Server, "uri", uri, "err", err)
				r.mu.Lock()
				if r.held[uri] == src {
					delete(r.held, uri)
				}
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// Updated tells the subscribers of uri that its content changed.
func (src *Source) Updated(uri string) {
	r := src.r
	r.mu.RLock()
	subs := slices.Clone(r.subs[uri])
	removed := src.removed
	r.mu.RUnlock()
	if removed {
		return
	}
	for _, s := range subs {
		s.fn(uri)
	}
	r.emit(Change{Kind: Updated, Server: src.p.Server, URI: uri})
}

// signature is a cheap identity of a listing, so that a re-sync that
// changes nothing announces nothing.
func signature(rs []Resource, ts []parsedTemplate) string {
	var b strings.Builder
	for _, x := range rs {
		fmt.Fprintf(&b, "r\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00", x.URI, x.Name, x.Title, x.Description, x.MIMEType, x.Size)
	}
	for _, x := range ts {
		fmt.Fprintf(&b, "t\x00%s\x00%s\x00%s\x00%s\x00%s\x00", x.URITemplate, x.Name, x.Title, x.Description, x.MIMEType)
	}
	return b.String()
}

// logCollisionsLocked logs a URI src lists that another source lists too,
// naming every server that lists it: once per URI, and again only when
// more servers list it. It indexes the other sources' URIs once (under the
// write lock, so in time linear in what all sources list), rather than
// searching every other listing for each of src's URIs.
func (r *Registry) logCollisionsLocked(src *Source) {
	var others map[string]bool // URIs some other source lists
	var shared map[string][]*Source
	for _, res := range src.resources {
		if others == nil {
			others = map[string]bool{}
			for _, o := range r.sources {
				if o != src {
					for _, x := range o.resources {
						others[x.URI] = true
					}
				}
			}
		}
		if others[res.URI] {
			if shared == nil {
				shared = map[string][]*Source{}
			}
			shared[res.URI] = nil
		}
	}
	if len(shared) == 0 {
		return
	}
	// Every server listing a shared URI, in routing order: the first is
	// the one Read goes to.
	for _, o := range r.routingLocked() {
		for _, x := range o.resources {
			if l, ok := shared[x.URI]; ok && (len(l) == 0 || l[len(l)-1] != o) {
				shared[x.URI] = append(l, o)
			}
		}
	}
	for _, res := range src.resources {
		l := shared[res.URI]
		// Logged again only when more servers list it than last time, so
		// that a third one is named too, and a re-sync says nothing.
		if len(l) < 2 || len(l) <= r.collision[res.URI] {
			continue
		}
		r.collision[res.URI] = len(l)
		names := make([]string, len(l)-1)
		for i, o := range l[1:] {
			names[i] = o.p.Server
		}
		r.log.Warn("resources: several servers list the same URI; reads go to the one first in the composition",
			"uri", res.URI, "servers", len(l), "reads", l[0].p.Server, "shadowed", strings.Join(names, ", "))
	}
}

// routingLocked returns the sources in routing order: by their entries'
// places in the composition, then (for providers of no entry, and ties)
// by registration.
func (r *Registry) routingLocked() []*Source {
	type placed struct {
		src *Source
		pos int
	}
	ps := make([]placed, len(r.sources))
	for i, src := range r.sources {
		pos := src.position()
		if pos < 0 {
			pos = math.MaxInt
		}
		ps[i] = placed{src, pos}
	}
	slices.SortStableFunc(ps, func(a, b placed) int { return cmp.Compare(a.pos, b.pos) })
	out := make([]*Source, len(ps))
	for i, p := range ps {
		out[i] = p.src
	}
	return out
}

// OnChange calls fn after every change, until s is disposed (or remove is
// called). A nil s panics.
func (r *Registry) OnChange(s *host.Scope, fn func(Change)) (remove func()) {
	if s == nil {
		panic("resources: OnChange needs the plugin's *host.Scope, got nil")
	}
	return r.changes.On(s, func(c Change) {
		defer func() {
			if p := recover(); p != nil {
				r.log.Error("resources change handler panicked", "panic", p)
			}
		}()
		fn(c)
	})
}

func (r *Registry) emit(c Change) { r.changes.Emit(c) }

// Servers returns the registered servers in routing order.
func (r *Registry) Servers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, len(r.sources))
	for i, s := range r.sources {
		out[i] = s.p.Server
	}
	return out
}

// List returns the resources that pass f, server by server in routing
// order, each server's in its own order.
func (r *Registry) List(f Filter) []Resource {
	words := queryWords(f.Query)
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Resource
	for _, s := range r.routingLocked() {
		if f.Server != "" && s.p.Server != f.Server {
			continue
		}
		for _, x := range s.resources {
			if matches(words, x.URI, x.Name, x.Title, x.Description, x.MIMEType) {
				out = append(out, x)
			}
		}
	}
	return out
}

// Templates returns the templates that pass f, like List.
func (r *Registry) Templates(f Filter) []Template {
	words := queryWords(f.Query)
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Template
	for _, s := range r.routingLocked() {
		if f.Server != "" && s.p.Server != f.Server {
			continue
		}
		for _, x := range s.templates {
			if matches(words, x.URITemplate, x.Name, x.Title, x.Description, x.MIMEType) {
				out = append(out, x.Template)
			}
		}
	}
	return out
}

func queryWords(q string) []string { return strings.Fields(strings.ToLower(q)) }

func matches(words []string, fields ...string) bool {
	if len(words) == 0 {
		return true
	}
	hay := strings.ToLower(strings.Join(fields, "\x00"))
	for _, w := range words {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// offersAnything reports whether some server lists a resource or template.
func (r *Registry) offersAnything() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.sources {
		if len(s.resources)+len(s.templates) > 0 {
			return true
		}
	}
	return false
}

// Has reports whether server is registered.
func (r *Registry) Has(server string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.sourceLocked(server) != nil
}

func (r *Registry) sourceLocked(server string) *Source {
	for _, s := range r.sources {
		if s.p.Server == server {
			return s
		}
	}
	return nil
}

// Owner returns the server a read of uri goes to: the first server listing
// it, else the first whose template matches it, else the only server.
func (r *Registry) Owner(uri string) (string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	src, err := r.ownerLocked(uri)
	if err != nil {
		return "", err
	}
	return src.p.Server, nil
}

func (r *Registry) ownerLocked(uri string) (*Source, error) {
	routing := r.routingLocked()
	for _, s := range routing {
		if slices.ContainsFunc(s.resources, func(x Resource) bool { return x.URI == uri }) {
			return s, nil
		}
	}
	for _, s := range routing {
		for _, t := range s.templates {
			if t.tmpl != nil && t.tmpl.Regexp().MatchString(uri) {
				return s, nil
			}
		}
	}
	switch len(r.sources) {
	case 0:
		return nil, fmt.Errorf("%w %q: no MCP server offering resources is connected", ErrNoOwner, uri)
	case 1:
		return r.sources[0], nil
	}
	return nil, fmt.Errorf("%w %q: no server lists it or has a template matching it; name the server (servers: %s)",
		ErrNoOwner, uri, strings.Join(r.serverNamesLocked(), ", "))
}

func (r *Registry) serverNamesLocked() []string {
	out := make([]string, len(r.sources))
	for i, s := range r.sources {
		out[i] = s.p.Server
	}
	return out
}

// Read reads uri from the server that owns it (see Owner). ch are the
// reader's back-channels: the server's questions during the read (an
// elicitation, a sampling request, roots/list) reach them; nil: nobody's.
func (r *Registry) Read(ctx context.Context, uri string, ch *tools.Channels) (ReadResult, error) {
	return r.ReadFrom(ctx, "", uri, ch)
}

// ReadFrom reads uri from server, as Read does; an empty server routes
// like Read.
func (r *Registry) ReadFrom(ctx context.Context, server, uri string, ch *tools.Channels) (ReadResult, error) {
	if strings.TrimSpace(uri) == "" {
		return ReadResult{}, errors.New("no URI given")
	}
	src, err := r.pick(server, uri)
	if err != nil {
		return ReadResult{}, err
	}
	res, err := src.p.Read(ctx, uri, ch)
	if err != nil {
		return ReadResult{Server: src.p.Server}, err
	}
	if res == nil {
		res = &mcp.ReadResourceResult{}
	}
	return ReadResult{Server: src.p.Server, ReadResourceResult: res}, nil
}

func (r *Registry) pick(server, uri string) (*Source, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if server == "" {
		return r.ownerLocked(uri)
	}
	src := r.sourceLocked(server)
	if src == nil {
		return nil, r.unknownLocked(server)
	}
	return src, nil
}

func (r *Registry) unknownLocked(server string) error {
	known := r.serverNamesLocked()
	if len(known) == 0 {
		return fmt.Errorf("%w %q: no MCP server offering resources is connected", ErrUnknownServer, server)
	}
	return fmt.Errorf("%w %q (servers: %s)", ErrUnknownServer, server, strings.Join(known, ", "))
}

// Expand turns a template into a URI with args (RFC 6570). The template
// must be one a server lists (server may be empty when only one lists it);
// it returns the URI and the server whose template it is. Every variable of
// the template must be given, and no other.
func (r *Registry) Expand(server, template string, args map[string]string) (uri, owner string, err error) {
	r.mu.RLock()
	var found *parsedTemplate
	var owners []string
	for _, s := range r.sources {
		if server != "" && s.p.Server != server {
			continue
		}
		for i := range s.templates {
			if s.templates[i].URITemplate == template {
				if found == nil {
					found = &s.templates[i]
				}
				owners = append(owners, s.p.Server)
			}
		}
	}
	if server != "" && r.sourceLocked(server) == nil {
		err = r.unknownLocked(server)
	}
	r.mu.RUnlock()
	if err != nil {
		return "", "", err
	}
	if found == nil {
		where := "any server"
		if server != "" {
			where = "server " + server
		}
		return "", "", fmt.Errorf("no template %q on %s; mcp_resources lists the templates", template, where)
	}
	if found.tmpl == nil {
		return "", "", fmt.Errorf("template %q of server %s does not parse as an RFC 6570 URI template", template, found.Server)
	}
	return expand(found.tmpl, args, found.Server)
}

func expand(t *uritemplate.Template, args map[string]string, server string) (string, string, error) {
	names := t.Varnames()
	optional := queryVars(t.Raw())
	var missing, unknown []string
	for _, n := range names {
		if _, ok := args[n]; !ok && !optional[n] {
			missing = append(missing, n)
		}
	}
	for k := range args {
		if !slices.Contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	if len(missing) > 0 || len(unknown) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "missing "+strings.Join(missing, ", "))
		}
		if len(unknown) > 0 {
			parts = append(parts, "unknown "+strings.Join(unknown, ", "))
		}
		return "", "", fmt.Errorf("template %s takes %s: %s", t.Raw(), strings.Join(names, ", "), strings.Join(parts, "; "))
	}
	vals := uritemplate.Values{}
	for k, v := range args {
		vals.Set(k, uritemplate.String(v))
	}
	uri, err := t.Expand(vals)
	if err != nil {
		return "", "", fmt.Errorf("expand %s: %w", t.Raw(), err)
	}
	return uri, server, nil
}

// queryVars returns the variables of a template's query expressions
// ({?a,b} and {&c}): those may be left out, the expansion then omits them.
// Every other variable is part of the path and must be given.
func queryVars(raw string) map[string]bool {
	out := map[string]bool{}
	for {
		i := strings.IndexByte(raw, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(raw[i:], '}')
		if j < 0 {
			return out
		}
		expr := raw[i+1 : i+j]
		raw = raw[i+j+1:]
		if expr == "" || (expr[0] != '?' && expr[0] != '&') {
			continue
		}
		for _, spec := range strings.Split(expr[1:], ",") {
			name, _, _ := strings.Cut(strings.TrimSuffix(spec, "*"), ":")
			out[name] = true
		}
	}
}

// TemplateVars returns the variable names of template, in order.
func TemplateVars(template string) ([]string, error) {
	t, err := uritemplate.New(template)
	if err != nil {
		return nil, err
	}
	return t.Varnames(), nil
}

// ErrNoCompletion marks a server that does not offer completion.
var ErrNoCompletion = errors.New("the server does not offer completion")

// Complete asks server for the values of one argument.
func (r *Registry) Complete(ctx context.Context, server string, req CompleteRequest) ([]string, error) {
	r.mu.RLock()
	src := r.sourceLocked(server)
	var err error
	if src == nil {
		err = r.unknownLocked(server)
	}
	r.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if src.p.Complete == nil {
		return nil, fmt.Errorf("%s: %w", server, ErrNoCompletion)
	}
	return src.p.Complete(ctx, req)
}

// unsubscribeTimeout bounds the unsubscribe sent after the last subscriber
// left.
const unsubscribeTimeout = 5 * time.Second

// ErrNoSubscribe marks a server that does not support subscriptions.
var ErrNoSubscribe = errors.New("the server does not support resource subscriptions")

// Subscribe calls fn with uri each time the server that owns uri says its
// content changed, until s is disposed (or cancel is called). The server is
// asked to subscribe for the first subscriber and to unsubscribe after the
// last. A subscription outlives its server's instance: when a provider
// that owns the URI registers again (a reload), it is subscribed there. fn
// runs on the provider's goroutine and must not block. A nil s panics.
//
// While the server is asked for a URI's first subscriber, later ones wait
// for its answer (or their ctx): a failure fails them too, so that nobody
// holds a subscription with nothing behind it.
func (r *Registry) Subscribe(ctx context.Context, s *host.Scope, uri string, fn func(uri string)) (cancel func(), err error) {
	if s == nil {
		panic("resources: Subscribe needs the subscribing plugin's *host.Scope, got nil")
	}
	sub := &subscriber{fn: fn}
	r.mu.Lock()
	for r.pending[uri] != nil {
		first := r.pending[uri]
		r.mu.Unlock()
		select {
		case <-first.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("subscribe %s: %w", uri, ctx.Err())
		}
		if first.err != nil && !first.ownCtx {
			return nil, first.err
		}
		r.mu.Lock()
	}
	if r.held[uri] == nil {
		src, err := r.ownerLocked(uri)
		if err == nil && src.p.Subscribe == nil {
			err = fmt.Errorf("%s: %w", src.p.Server, ErrNoSubscribe)
		}
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		first := &firstSubscribe{done: make(chan struct{})}
		r.held[uri], r.pending[uri] = src, first
		r.mu.Unlock()
		err = src.p.Subscribe(ctx, uri)
		r.mu.Lock()
		delete(r.pending, uri)
		if err != nil {
			if r.held[uri] == src {
				delete(r.held, uri)
			}
			first.err = fmt.Errorf("%s: subscribe %s: %w", src.p.Server, uri, err)
			first.ownCtx = ctx.Err() != nil
			close(first.done)
			r.mu.Unlock()
			return nil, first.err
		}
		close(first.done)
	}
	r.subs[uri] = append(r.subs[uri], sub)
	r.mu.Unlock()
	return s.Effect("resources subscription "+uri, func() {
		r.mu.Lock()
		r.subs[uri] = slices.DeleteFunc(r.subs[uri], func(x *subscriber) bool { return x == sub })
		var held *Source
		if len(r.subs[uri]) == 0 {
			delete(r.subs, uri)
			held = r.held[uri]
			delete(r.held, uri)
		}
		r.mu.Unlock()
		if held != nil && held.p.Unsubscribe != nil {
			// Bounded: an unsubscribe is a courtesy to the server.
			uctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
			defer cancel()
			if err := held.p.Unsubscribe(uctx, uri); err != nil {
				r.log.Debug("resources: unsubscribe failed", "server", held.p.Server, "uri", uri, "err", err)
			}
		}
	}), nil
}

// Subscribed reports whether anyone follows uri.
func (r *Registry) Subscribed(uri string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.subs[uri]) > 0
}
