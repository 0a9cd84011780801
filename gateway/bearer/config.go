// Package bearer is the gateway's OAuth 2.1 resource server (MCP
// authorization, 2025-06-18 and later): it checks the bearer access
// tokens an issuer signed for the gateway (its audience), JWTs by their
// signature (the issuer's JWKS, found by RFC 8414 or OpenID Connect
// discovery and refetched, throttled, when the issuer rotates its keys)
// and opaque ones by RFC 7662 introspection; it publishes where to get a
// token (RFC 9728) and answers a refusal with its RFC 6750 challenge.
//
// A checked token becomes go-sdk's auth.TokenInfo, whose Extra carries
// the caller's tools.Identity (IdentityOf). The token itself goes no
// further: upstream servers see the gateway's own credentials only.
// Nothing here knows the gateway: it is given an HTTP request and
// answers who sent it.
package bearer

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// Config is what the gateway accepts: bearer access tokens of Issuer for
// Audience. Its keys are those of a gateway entry's auth block.
type Config struct {
	// Issuer is the authorization server's issuer identifier, such as
	// https://login.example.com/realms/team. Required.
	Issuer string `yaml:"issuer"`
	// Audience is the gateway's resource identifier (RFC 8707, RFC 9728):
	// its public URL, such as https://mcp.example.com/mcp. Tokens must
	// name it in aud; clients ask for it as resource. Required.
	Audience string `yaml:"audience"`
	// GroupsClaim names the claim that lists the subject's groups
	// (default "groups"); dots reach into objects (realm_access.roles).
	GroupsClaim string `yaml:"groupsClaim"`
	// JWKSURL is where the issuer publishes its signing keys (default:
	// jwks_uri of the issuer's metadata).
	JWKSURL string `yaml:"jwksUrl"`
	// RequiredScopes must all be granted to a token; one without them is
	// answered 403 insufficient_scope, naming them, so the client steps up.
	RequiredScopes []string `yaml:"requiredScopes"`
	// IntrospectionURL, when set, is the issuer's RFC 7662 endpoint, which
	// explains tokens that are not JWTs (opaque ones). Credentials the
	// endpoint wants go in the URL (https://id:${SECRET}@host/introspect),
	// sent as HTTP Basic authentication.
	IntrospectionURL string `yaml:"introspectionUrl"`
}

// DefaultGroupsClaim is the claim read for groups unless groupsClaim says.
const DefaultGroupsClaim = "groups"

// ClockSkew is how far exp and nbf may be off from the gateway's clock.
const ClockSkew = time.Minute

// Validate checks c; each error is a *host.KeyError naming its key
// (issuer, requiredScopes[0]...) relative to the block.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, host.KeyErrorf(key, format, args...))
	}
	if c.Issuer == "" {
		bad("issuer", "required: the issuer identifier of your authorization server, such as https://login.example.com/realms/team")
	} else if err := checkURL(c.Issuer, false); err != nil {
		bad("issuer", "%q: %v", c.Issuer, err)
	}
	if c.Audience == "" {
		bad("audience", "required: the gateway's public URL, such as https://mcp.example.com/mcp, which tokens must name in aud")
	} else if err := checkURL(c.Audience, true); err != nil {
		bad("audience", "%q: %v; it is the gateway's resource identifier (RFC 8707), its public URL", c.Audience, err)
	}
	if c.JWKSURL != "" {
		if err := checkURL(c.JWKSURL, false); err != nil {
			bad("jwksUrl", "%q: %v", c.JWKSURL, err)
		}
	}
	if c.IntrospectionURL != "" {
		if err := checkURL(c.IntrospectionURL, false); err != nil {
			bad("introspectionUrl", "%q: %v", c.IntrospectionURL, err)
		}
	}
	for i, s := range c.RequiredScopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			bad(fmt.Sprintf("requiredScopes[%d]", i), "%q must be one scope token, without spaces or quotes", s)
		}
	}
	if c.GroupsClaim != "" && slices.Contains(strings.Split(c.GroupsClaim, "."), "") {
		bad("groupsClaim", "%q: want a claim name, or names joined by dots for a nested claim (realm_access.roles)", c.GroupsClaim)
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute https URL, or http on a loopback host
// (a test or a local issuer); fragment-free, as RFC 8707 wants for a
// resource when resource is set.
func checkURL(raw string, resource bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return errors.New("want an absolute https URL")
	case u.Scheme == "http" && !LoopbackHost(u.Hostname()):
		return errors.New("want https (http only on a loopback host)")
	case resource && u.Fragment != "":
		return errors.New("a resource identifier has no fragment")
	}
	return nil
}

// LoopbackHost reports whether host (a name or an IP, without port or
// brackets) is the local machine only: "localhost" or a loopback IP.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ResourceMetadataURL is where RFC 9728 §3.1 puts the metadata of the
// resource: the well-known path inserted between its host and its path.
func ResourceMetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(u.Path, "/")
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
}
