package mcpclient

import (
	"context"
	"io"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/logins"
)

// offerLogin makes the login of cfg's server reachable by its serverName
// (/mcp login) while the instance of s runs. The login is Login's, as for
// `dsh-host login`: it stores the token, and the instance, which polls the
// store while it needs a login, connects by itself.
func offerLogin(s *host.Scope, cfg Config, h *oauthHandler) {
	reg, ok := host.Lookup(s, logins.Key)
	if !ok {
		return
	}
	reg.Offer(s, logins.Offer{
		Server:  cfg.ServerName,
		Pending: h.pending,
		Login: func(ctx context.Context, out io.Writer) (string, error) {
			// A person asked: the browser step runs even where the front
			// end does not let servers start one by themselves (serve).
			b := BrowserStep{Out: out}
			if fe := browserStep.Load(); fe != nil {
				b.Open, b.Timeout = fe.Open, fe.Timeout
				if fe.Out != nil {
					// The front end's stream shows the URL at once; the
					// reply comes when the login is done.
					b.Out = io.MultiWriter(out, fe.Out)
				}
			}
			return Login(ctx, cfg, &b)
		},
	})
}
