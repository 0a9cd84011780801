package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// howAuth is a tool that answers how its caller authenticated.
var howAuth = tools.Definition{
	Name: "how", Description: "How the caller authenticated.", InputSchema: json.RawMessage(`{"type":"object"}`),
	Execute: func(_ context.Context, call tools.Call) (tools.Output, error) {
		return tools.Output{Value: call.Caller.Auth, Content: []tools.Content{tools.Text("auth=" + call.Caller.Auth)}}, nil
	},
}

// TestCallerAuthWithIssuer: beside an issuer's tokens, a call under the
// gateway's static token is marked static-token (the audit trail shows
// it), and one under an access token oauth.
func TestCallerAuthWithIssuer(t *testing.T) {
	static := strings.Repeat("s", 32)
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}, static: static, tools: []tools.Definition{howAuth}})
	if text, _ := authCall(t, f.mustConnect(t, static), "how", nil); text != "auth=static-token" {
		t.Errorf("under the static token: %q, want auth=static-token", text)
	}
	if text, _ := authCall(t, f.mustConnect(t, f.as.Sign(f.as.Claims("alice", nil))), "how", nil); text != "auth=oauth" {
		t.Errorf("under alice's access token: %q, want auth=oauth", text)
	}
}

// TestCallerAuthTokenOnly: on a listener with a token and no auth block,
// every call is under the static token, and says so; a listener without
// a token marks nothing.
func TestCallerAuthTokenOnly(t *testing.T) {
	const token = "a-long-enough-test-token"
	for _, tc := range []struct{ token, want string }{{token, "auth=static-token"}, {"", "auth="}} {
		reg := tools.New(nil)
		register(t, reg, howAuth)
		l := serveLimited(t, reg, Config{}, serveOptions{token: tc.token})
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: l.url,
			HTTPClient: &http.Client{Transport: &tokenTransport{token: tc.token, base: tr}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := authCall(t, cs, "how", nil)
		cs.Close()
		if text != tc.want {
			t.Errorf("listener token %q: %q, want %q", tc.token, text, tc.want)
		}
	}
}
