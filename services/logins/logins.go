// Package logins lets a command reach the OAuth login of a running MCP
// server. An mcp-client instance whose server logs in in the browser
// offers its login here, on its scope, so the offer goes away with the
// instance; /mcp login (plugins/mcpfold) finds it by serverName and runs
// it. A server that waits for a login has no tools, so this is also where
// /mcp learns that it exists.
//
// A front end where a person or a script drives the command installs the
// browser step here (AllowBrowser), as it installs elicitation answerers
// on services/elicit: servers then log in in this process when they ask.
package logins

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// PluginName is the name of the built-in instance that provides the service
// (and its id).
const PluginName = "logins"

// Key is the logins service.
var Key = host.NewKey[*Registry]("logins")

func init() {
	host.Register(host.Definition[struct{}]{
		Name:        PluginName,
		Description: "the OAuth logins of running MCP servers, for /mcp login",
		Builtin:     true,
		Provides:    []host.AnyKey{Key},
		Apply: func(s *host.Scope, _ struct{}) error {
			return host.Provide(s, Key, &Registry{})
		},
	})
}

// Offer is one server's login.
type Offer struct {
	// Server is the MCP serverName.
	Server string
	// Pending says why the server waits for a login now, "" when it does
	// not (logged in, or it never asked).
	Pending func() string
	// Login runs the browser step, writing the authorization URL to out as
	// soon as it is known, stores the token, and returns the login's status
	// ("logged in (scopes …)"). The instance then connects by itself.
	Login func(ctx context.Context, out io.Writer) (string, error)
}

// Registry holds the offers. It is safe for concurrent use; the zero value
// is ready to use.
type Registry struct {
	mu      sync.Mutex
	offers  []*Offer
	browser *BrowserStep
}

// DefaultLoginTimeout bounds one browser step.
const DefaultLoginTimeout = 5 * time.Minute

// BrowserStep lets a login run in this process: a front end where a person
// or a script drives the command (run, login, tools, call, prompt, command)
// allows it; `serve` does not, and its servers that need a login wait for
// one made elsewhere.
type BrowserStep struct {
	// Out receives the authorization URL and what the login is waiting
	// for; nil discards them.
	Out io.Writer
	// Open opens the authorization URL. Nil runs $BROWSER with the URL as
	// its last argument when it is set, else the platform's opener; when
	// neither runs, the printed URL is all there is.
	Open func(ctx context.Context, url string) error
	// Timeout bounds one login (default DefaultLoginTimeout).
	Timeout time.Duration
}

// AllowBrowser lets servers log in in this process with b (nil forbids it
// again) and returns a func that restores the previous setting.
func (r *Registry) AllowBrowser(b *BrowserStep) (restore func()) {
	r.mu.Lock()
	old := r.browser
	r.browser = b
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.browser = old
		r.mu.Unlock()
	}
}

// Browser returns the browser step a front end allowed, nil when none.
func (r *Registry) Browser() *BrowserStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.browser
}

// Offer adds o on behalf of the instance whose scope is s; it goes away
// when s is disposed. The host keeps serverNames unique.
func (r *Registry) Offer(s *host.Scope, o Offer) {
	e := &o
	r.mu.Lock()
	r.offers = append(r.offers, e)
	r.mu.Unlock()
	s.Effect("login offer "+o.Server, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.offers = slices.DeleteFunc(r.offers, func(x *Offer) bool { return x == e })
	})
}

// Get returns the offer of server.
func (r *Registry) Get(server string) (Offer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.offers {
		if o.Server == server {
			return *o, true
		}
	}
	return Offer{}, false
}

// List returns the offers sorted by server.
func (r *Registry) List() []Offer {
	r.mu.Lock()
	out := make([]Offer, len(r.offers))
	for i, o := range r.offers {
		out[i] = *o
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Offer) int { return strings.Compare(a.Server, b.Server) })
	return out
}
