package oauth

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/tokenstore"
)

// TestNoLoginIsRememberedUntilTheStoreChanges: for a server with no stored
// login, a request does not lock and read the store again while the token
// file stays as it was (a server without OAuth paid that on every call),
// and a login written later is used at the next request.
func TestNoLoginIsRememberedUntilTheStoreChanges(t *testing.T) {
	// Every request looks at the file here; TestLoginCheckedOncePerInterval
	// covers the interval.
	dir := filepath.Join(t.TempDir(), "oauth")
	logs := &mcptest.Logs{}
	h := newHandler(Server{Name: "web", URL: "http://127.0.0.1:9/mcp"}, tokenstore.New(dir), nil, nil, slog.New(logs))
	h.recheck = 0
	defer h.Close()
	if tok := h.token(t.Context(), ""); tok != nil {
		t.Fatalf("token = %v with nothing stored", tok)
	}
	// A store that can no longer be locked would be reported if read again.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if tok := h.token(t.Context(), ""); tok != nil || logs.Has(slog.LevelWarn, "stored login unusable") {
		t.Fatalf("second request: token %v; it read the store again:\n%s", tok, logs.Dump())
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	want := &oauth2.Token{AccessToken: "a", Expiry: time.Now().Add(time.Hour)}
	if err := tokenstore.New(dir).Save(h.serverURL, tokenstore.Record{Token: want}); err != nil {
		t.Fatal(err)
	}
	if tok := h.token(t.Context(), ""); tok == nil || tok.AccessToken != "a" {
		t.Fatalf("after a login: token %v, want the stored one", tok)
	}
}

// TestLoginCheckedOncePerInterval: within recheck of a look at the
// token file, requests take the cached answer without a stat; after it,
// the next request sees a login written meanwhile.
func TestLoginCheckedOncePerInterval(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	h := newHandler(Server{Name: "web", URL: "http://127.0.0.1:9/mcp"}, tokenstore.New(dir), nil, nil, discard())
	h.recheck = time.Hour
	defer h.Close()
	if tok := h.token(t.Context(), ""); tok != nil {
		t.Fatalf("token = %v with nothing stored", tok)
	}
	want := &oauth2.Token{AccessToken: "a", Expiry: time.Now().Add(time.Hour)}
	if err := tokenstore.New(dir).Save(h.serverURL, tokenstore.Record{Token: want}); err != nil {
		t.Fatal(err)
	}
	if tok := h.token(t.Context(), ""); tok != nil {
		t.Fatalf("within the interval: token %v, want the cached absence", tok)
	}
	h.recheck = 0
	if tok := h.token(t.Context(), ""); tok == nil || tok.AccessToken != "a" {
		t.Fatalf("after the interval: token %v, want the stored one", tok)
	}
	// A refused token is never answered from the cache.
	h.recheck = time.Hour
	if tok := h.token(t.Context(), "a"); tok != nil {
		t.Fatalf("after the server refused it: token %v, want none (it cannot be refreshed)", tok)
	}
}
