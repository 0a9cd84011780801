package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// staticTokenKey marks, in TokenInfo.Extra, the holder of the gateway's
// own token: the audit trail tells its calls from those that presented
// nothing (Caller.Auth).
const staticTokenKey = "dsh-host/static-token"

// newStaticInfo is the token information of the static token's holder:
// no identity, one UserID for every request (a session is its opener's).
func newStaticInfo() *auth.TokenInfo {
	return &auth.TokenInfo{UserID: "static token", Extra: map[string]any{staticTokenKey: true}}
}

// staticTokenInfo hands the static token's information to go-sdk for a
// listener whose token protect has already checked (no auth block), as
// requireAuth does with auth: each request's RequestExtra.TokenInfo.
func staticTokenInfo(next http.Handler) http.Handler {
	info := newStaticInfo()
	return auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return info, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}

// authOf is how req's caller authenticated (tools.Caller.Auth); id is the
// identity its token carries.
func authOf(req mcp.Request, id *tools.Identity) string {
	if id != nil {
		return tools.AuthOAuth
	}
	if req == nil {
		return ""
	}
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if static, _ := extra.TokenInfo.Extra[staticTokenKey].(bool); static {
			return tools.AuthStaticToken
		}
	}
	return ""
}
