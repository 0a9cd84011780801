package mcpclient

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/dsh-host/dsh-host/internal/tokenstore"
)

// TestNoLoginIsRememberedUntilTheStoreChanges: for a server with no stored
// login, a request does not lock and read the store again while the token
// file stays as it was (a server without OAuth paid that on every call),
// and a login written later is used at the next request.
func TestNoLoginIsRememberedUntilTheStoreChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	cfg := Defaults()
	cfg.ServerName, cfg.Transport, cfg.URL = "web", TransportStreamableHTTP, "http://127.0.0.1:9/mcp"
	logs := &logRecorder{}
	h := newOAuthHandlerWith(&cfg, tokenstore.New(dir), nil, slog.New(logs))
	defer h.close()
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
	if tok := h.token(t.Context(), ""); tok != nil || logs.has(slog.LevelWarn, "stored login unusable") {
		t.Fatalf("second request: token %v; it read the store again:\n%s", tok, logs.dump())
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
