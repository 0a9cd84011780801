// Package logins lets a command reach the OAuth login of a running MCP
// server. An mcp-client instance whose server logs in in the browser
// offers its login here, on its scope, so the offer goes away with the
// instance; /mcp login (plugins/mcpfold) finds it by serverName and runs
// it. A server that waits for a login has no tools, so this is also where
// /mcp learns that it exists.
package logins

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/host"
)

// Key is the logins service.
var Key = host.NewKey[*Registry]("logins")

func init() {
	host.Register(host.Definition[struct{}]{
		Name:        "logins",
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
	mu     sync.Mutex
	offers []*Offer
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
