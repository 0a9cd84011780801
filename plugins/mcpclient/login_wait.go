package mcpclient

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/oauth"
	"github.com/dsh-host/dsh-host/services/logins"
)

// loginPoll is how often a server that needs a login looks for a token in
// the store (a stat of one file).
const loginPoll = time.Second

// needLogin handles a server that asked for a person's login. Where a
// front end allows the browser step, the login runs here, once per
// outage, and a connection attempt follows. Otherwise, or when the login
// fails, the server shows as needing a login, with no tools, and other
// servers go on; it connects by itself once a token lands in the store
// (`dsh-host login` in another process).
func (c *client) needLogin(ctx context.Context, first bool, nl *oauth.NeedsLoginError) {
	var loginErr error
	if b := c.opt.oauth.Browser(); b != nil && !c.login.tried {
		c.login.tried = true
		c.setState("waiting for the login in the browser", "the server waits for a login in the browser")
		err := c.opt.oauth.LogIn(ctx, b, nl)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			c.login.needed = false
			c.attempt(ctx, first)
			return
		}
		c.opt.logger.Warn(c.label+": login failed", "err", err)
		loginErr = err
	}
	c.setInstructions("")
	c.tools.Clear()
	if !c.login.needed {
		c.opt.logger.Warn(c.label + ": " + nl.Error())
	}
	c.login.needed = true
	c.login.stamp = c.opt.oauth.Stamp()
	detail := "needs login — run: dsh-host login " + c.opt.cfg.ServerName
	if loginErr != nil {
		detail += " (the login failed: " + loginErr.Error() + ")"
	}
	c.opt.oauth.Wait(detail)
	// Calls say why, the server's own explanation included.
	c.setState(detail, nl.Error())
	c.retry.timer = time.NewTimer(loginPoll)
}

// hasHeader reports whether headers set name (any case): a configured
// Authorization header is the user's choice of credential, and no OAuth
// login replaces it.
func hasHeader(headers map[string]string, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// offerLogin makes the login of cfg's server reachable by its serverName
// (/mcp login) while the instance of s runs. The login is Login's, as for
// `dsh-host login`: it stores the token, and the instance, which polls the
// store while it needs a login, connects by itself.
func offerLogin(s *host.Scope, reg *logins.Registry, cfg Config, h *oauth.Handler) {
	reg.Offer(s, logins.Offer{
		Server:  cfg.ServerName,
		Pending: h.Pending,
		Login: func(ctx context.Context, out io.Writer) (string, error) {
			// A person asked: the browser step runs even where the front
			// end does not let servers start one by themselves (serve).
			b := logins.BrowserStep{Out: out}
			if fe := reg.Browser(); fe != nil {
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

// Login logs in to cfg's server with the browser step b (oauth.Login).
func Login(ctx context.Context, cfg Config, b *logins.BrowserStep) (string, error) {
	if err := loginable(&cfg); err != nil {
		return "", err
	}
	return oauth.Login(ctx, oauthServer(&cfg), cfg.Headers, clientInfo, b)
}

// Logout deletes the stored login of cfg's server and revokes its tokens
// (oauth.Logout).
func Logout(ctx context.Context, cfg Config) (string, error) {
	if err := loginable(&cfg); err != nil {
		return "", err
	}
	return oauth.Logout(ctx, oauthServer(&cfg))
}

func oauthServer(cfg *Config) oauth.Server {
	return oauth.Server{Name: cfg.ServerName, URL: cfg.URL, OAuth: cfg.OAuth}
}

// loginable checks that cfg's server can be logged in to.
func loginable(cfg *Config) error {
	if cfg.Transport != TransportStreamableHTTP {
		return fmt.Errorf("%s uses transport %s; only a remote (streamable-http) server logs in", cfg.ServerName, cfg.Transport)
	}
	if hasHeader(cfg.Headers, "Authorization") {
		return fmt.Errorf("%s has an Authorization header in its config, which is its credential; remove it to log in with OAuth", cfg.ServerName)
	}
	return nil
}
