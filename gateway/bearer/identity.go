package bearer

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/dsh-host/dsh-host/services/tools"
)

// The keys of auth.TokenInfo.Extra this package fills.
const (
	// identityKey holds the caller's *tools.Identity.
	identityKey = "dsh-host/identity"
	// staticKey marks the holder of the gateway's own static token: the
	// audit trail tells its calls from those that presented nothing.
	staticKey = "dsh-host/static-token"
)

// staticUserID is the UserID of the static token's holder: one for every
// request, so that a session is its opener's.
const staticUserID = "static token"

// StaticInfo is the token information of the static token's holder: no
// identity.
func StaticInfo() *auth.TokenInfo {
	return &auth.TokenInfo{UserID: staticUserID, Extra: map[string]any{staticKey: true}}
}

// IsStatic reports whether info is the static token's (StaticInfo).
func IsStatic(info *auth.TokenInfo) bool {
	if info == nil {
		return false
	}
	static, _ := info.Extra[staticKey].(bool)
	return static
}

// IdentityOf is the identity info carries: nil for none (no token, the
// static token).
func IdentityOf(info *auth.TokenInfo) *tools.Identity {
	if info == nil {
		return nil
	}
	id, _ := info.Extra[identityKey].(*tools.Identity)
	return id
}

// Token extracts the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 9110 §11.1).
func Token(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
