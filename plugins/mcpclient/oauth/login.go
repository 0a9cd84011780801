package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/dsh-host/dsh-host/internal/tokenstore"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
	"github.com/dsh-host/dsh-host/services/logins"
)

// Login logs in to srv with the browser step b, whether or not a token is
// stored, and checks the new token by connecting as client, with headers,
// and listing the tools. It returns the login's status ("logged in
// (scopes …)"). A running instance of the server, in this process or
// another, picks the token up from the store.
func Login(ctx context.Context, srv Server, headers map[string]string, client *mcp.Implementation, b *logins.BrowserStep) (string, error) {
	h := New(srv, nil, slog.New(slog.DiscardHandler))
	defer h.Close()
	if h.machine != nil {
		return "", fmt.Errorf("%s uses grant client_credentials: it logs in by itself, with no browser step", srv.Name)
	}
	lh := &loginHandler{h: h, b: b}
	httpClient, base, endpoint := remote.NewClient(srv.URL, headers)
	defer base.CloseIdleConnections()
	session, err := mcp.NewClient(client, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: httpClient, OAuthHandler: lh,
	}, nil)
	if err != nil {
		return "", fmt.Errorf("login to %s: %w", srv.Name, err)
	}
	_, err = session.ListTools(ctx, nil)
	_ = session.Close()
	if err != nil {
		return "", fmt.Errorf("login to %s: listing the tools with the new token: %w", srv.Name, err)
	}
	if !lh.done.Load() {
		return "", fmt.Errorf("%s did not ask for a login: it answered without a token", srv.Name)
	}
	return h.Status(), nil
}

// loginHandler makes go-sdk's first request go without a token, so that
// the server's 401 starts a login even when a token is stored.
type loginHandler struct {
	h    *Handler
	b    *logins.BrowserStep
	done atomic.Bool
}

func (l *loginHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if !l.done.Load() {
		return nil, nil
	}
	return l.h.TokenSource(ctx)
}

func (l *loginHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	ch := readChallenge(req, resp)
	if ch.status == http.StatusForbidden && ch.bearerParam("error") != "insufficient_scope" {
		return fmt.Errorf("authorization refused: %s", ch.explain())
	}
	if err := l.h.login(ctx, l.b, ch); err != nil {
		return err
	}
	l.done.Store(true)
	return nil
}

// Logout deletes the stored login of srv and revokes its tokens
// where the authorization server offers revocation (RFC 7009). It returns
// what it did.
func Logout(ctx context.Context, srv Server) (string, error) {
	h := New(srv, nil, slog.New(slog.DiscardHandler))
	defer h.Close()
	if h.store == nil {
		return "", fmt.Errorf("no token store: %w", h.storeErr)
	}
	recs, err := h.store.Delete(h.serverURL)
	if err != nil {
		return "", err
	}
	if len(recs) == 0 {
		return "not logged in to " + srv.Name, nil
	}
	var notes []string
	for _, rec := range recs {
		if note := h.revoke(ctx, rec); note != "" {
			notes = append(notes, note)
		}
	}
	msg := "logged out of " + srv.Name
	if len(notes) > 0 {
		msg += " (" + strings.Join(notes, "; ") + ")"
	}
	return msg, nil
}

// revoke revokes rec's tokens, the refresh token first (which ends the
// grant), and says what came of it. The token store is already cleared:
// a failed revocation is reported, not an error.
func (h *Handler) revoke(ctx context.Context, rec tokenstore.Record) string {
	if rec.Token == nil || rec.Issuer == "" {
		return ""
	}
	asm, err := auth.GetAuthServerMetadata(ctx, rec.Issuer, h.client)
	if err != nil || asm == nil {
		return "could not read the authorization server's metadata to revoke the token"
	}
	if asm.RevocationEndpoint == "" {
		return "the authorization server offers no revocation; the token stays valid until it expires"
	}
	secret := rec.ClientSecret
	if rec.ClientID == h.oauth.ClientID && h.oauth.ClientSecret != "" {
		secret = h.oauth.ClientSecret
	}
	var failed []string
	for _, t := range []struct{ token, hint string }{{rec.Token.RefreshToken, "refresh_token"}, {rec.Token.AccessToken, "access_token"}} {
		if t.token == "" {
			continue
		}
		if err := revokeToken(ctx, h.client, asm.RevocationEndpoint, rec.ClientID, secret, t.token, t.hint); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return "revocation failed: " + strings.Join(failed, "; ")
	}
	return "token revoked"
}

// revokeToken is one RFC 7009 request; x/oauth2 has none.
func revokeToken(ctx context.Context, client *http.Client, endpoint, clientID, secret, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	if secret == "" {
		form.Set("client_id", clientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return errors.New("the revocation endpoint did not answer")
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the revocation endpoint answered %s", resp.Status)
	}
	return nil
}
