package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/services/tools"
)

// staticTokenInfo hands the static token's information to go-sdk for a
// listener whose token protect has already checked (no auth block), as
// requireAuth does with auth: each request's RequestExtra.TokenInfo.
func staticTokenInfo(next http.Handler) http.Handler {
	info := bearer.StaticInfo()
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
	if extra := req.GetExtra(); extra != nil && bearer.IsStatic(extra.TokenInfo) {
		return tools.AuthStaticToken
	}
	return ""
}
