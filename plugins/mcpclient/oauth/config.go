package oauth

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
)

// Grants the oauth block's grant key may name.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// Config is the optional oauth block of a remote server.
type Config struct {
	// ClientID and ClientSecret are a client registered with the
	// authorization server beforehand (give the secret as ${VAR}).
	ClientID     string `yaml:"clientId"`
	ClientSecret string `yaml:"clientSecret"`
	// ClientMetadataURL is the https URL of this host's Client ID Metadata
	// Document, used as its client id where the server supports it.
	ClientMetadataURL string `yaml:"clientMetadataUrl"`
	// Scopes, when set, are asked for instead of those the server names.
	Scopes []string `yaml:"scopes"`
	// CallbackPort is the loopback port of the redirect (0: any free one).
	CallbackPort int `yaml:"callbackPort"`
	// Grant is authorization_code (default: a person logs in in a
	// browser) or client_credentials (a machine account).
	Grant string `yaml:"grant"`
	// PrivateKeyFile and SigningAlgorithm authenticate a client_credentials
	// client with a signed JWT (RFC 7523) instead of a secret.
	PrivateKeyFile   string `yaml:"privateKeyFile"`
	SigningAlgorithm string `yaml:"signingAlgorithm"`
}

// Set reports whether any key of the block is set.
func (o *Config) Set() bool {
	return o.ClientID != "" || o.ClientSecret != "" || o.ClientMetadataURL != "" || len(o.Scopes) > 0 ||
		o.CallbackPort != 0 || o.Grant != "" || o.PrivateKeyFile != "" || o.SigningAlgorithm != ""
}

// Validate returns every problem of the block, each naming its key.
func (o *Config) Validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, host.KeyErrorf("oauth."+key, format, args...))
	}
	cc := o.Grant == GrantClientCredentials
	switch o.Grant {
	case "", GrantAuthorizationCode, GrantClientCredentials:
	default:
		bad("grant", "%q must be authorization_code or client_credentials", o.Grant)
	}
	if o.CallbackPort < 0 || o.CallbackPort > 65535 {
		bad("callbackPort", "%d must be 0 (any free port) to 65535", o.CallbackPort)
	}
	if o.ClientMetadataURL != "" {
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			bad("clientMetadataUrl", "%q must be an https:// URL with a path", remote.Redact(o.ClientMetadataURL))
		}
	}
	for i, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"\\") {
			bad(fmt.Sprintf("scopes[%d]", i), "%q must be one scope token, without spaces or quotes", sc)
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		bad("clientSecret", "needs clientId")
	}
	if cc {
		if o.ClientID == "" {
			bad("clientId", "required with grant client_credentials")
		}
		if (o.ClientSecret == "") == (o.PrivateKeyFile == "") {
			bad("grant", "client_credentials needs exactly one of clientSecret and privateKeyFile")
		}
		if o.ClientMetadataURL != "" {
			bad("clientMetadataUrl", "not used with grant client_credentials; remove it")
		}
	} else {
		if o.PrivateKeyFile != "" {
			bad("privateKeyFile", "only used with grant client_credentials")
		}
	}
	switch o.SigningAlgorithm {
	case "":
	case "RS256", "ES256":
		if o.PrivateKeyFile == "" {
			bad("signingAlgorithm", "needs privateKeyFile")
		}
	default:
		bad("signingAlgorithm", "%q must be RS256 or ES256", o.SigningAlgorithm)
	}
	return errs
}
