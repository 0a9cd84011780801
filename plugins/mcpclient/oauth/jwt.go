package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// jwtHandler is the client_credentials grant with a private-key JWT
// client assertion (RFC 7523, private_key_jwt). go-sdk's extauth handler
// takes a client secret only; discovery is go-sdk's (oauthex, auth) and
// the token request x/oauth2's, so what is done here is signing the
// assertion, a fresh one for every token request.
type jwtHandler struct {
	oauth  Config
	client *http.Client

	mu sync.Mutex
	ts oauth2.TokenSource
}

// assertionType is RFC 7523's client_assertion_type.
const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

func (h *jwtHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

func (h *jwtHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	ch := readChallenge(req, resp)
	key, err := readPrivateKey(h.oauth.PrivateKeyFile)
	if err != nil {
		return err
	}
	alg := h.oauth.SigningAlgorithm
	if alg == "" {
		alg = "RS256"
		if _, ok := key.(*ecdsa.PrivateKey); ok {
			alg = "ES256"
		}
	}
	prm, err := discoverResource(ctx, ch, h.client)
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.client)
	if err != nil {
		return fmt.Errorf("authorization server metadata of %s: %w", prm.AuthorizationServers[0], err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], TokenEndpoint: strings.TrimSuffix(prm.AuthorizationServers[0], "/") + "/token"}
	}
	scopes := h.oauth.Scopes
	if len(scopes) == 0 {
		if s := ch.bearerParam("scope"); s != "" {
			scopes = strings.Fields(s)
		} else {
			scopes = prm.ScopesSupported
		}
	}
	src := &assertionSource{ctx: context.WithValue(context.Background(), oauth2.HTTPClient, h.client),
		clientID: h.oauth.ClientID, tokenURL: asm.TokenEndpoint, audience: asm.Issuer,
		resource: prm.Resource, scopes: scopes, key: key, alg: alg}
	ts := oauth2.ReuseTokenSource(nil, src)
	if _, err := ts.Token(); err != nil {
		return fmt.Errorf("client credentials with a private key: %w", err)
	}
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	return nil
}

// discoverResource finds the protected resource metadata (RFC 9728) the
// challenge points at, else at the well-known paths; a server without
// any is its own authorization server (the 2025-03-26 fallback).
func discoverResource(ctx context.Context, ch *challenge, client *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	resource := ch.req.URL.String()
	var urls [][2]string
	if u := ch.bearerParam("resource_metadata"); u != "" {
		urls = append(urls, [2]string{u, resource})
	}
	ru := *ch.req.URL
	mu := ru
	mu.RawQuery = ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	urls = append(urls, [2]string{mu.String(), resource})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := ru
	root.Path, root.RawQuery = "", ""
	urls = append(urls, [2]string{mu.String(), root.String()})
	for _, u := range urls {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, u[0], u[1], client)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("protected resource metadata at %s names no authorization server", u[0])
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: resource}, nil
}

// assertionSource fetches a token with a newly signed assertion each time.
type assertionSource struct {
	ctx                          context.Context
	clientID, tokenURL, audience string
	resource                     string
	scopes                       []string
	key                          crypto.Signer
	alg                          string
}

func (s *assertionSource) Token() (*oauth2.Token, error) {
	jwt, err := signAssertion(s.key, s.alg, s.clientID, s.audience, time.Now())
	if err != nil {
		return nil, err
	}
	params := url.Values{"client_assertion_type": {assertionType}, "client_assertion": {jwt}}
	if s.resource != "" {
		params.Set("resource", s.resource)
	}
	cfg := clientcredentials.Config{
		ClientID: s.clientID, TokenURL: s.tokenURL, Scopes: s.scopes,
		EndpointParams: params, AuthStyle: oauth2.AuthStyleInParams,
	}
	return cfg.Token(s.ctx)
}

// signAssertion returns the client assertion JWT: issued by and about the
// client, for audience, valid five minutes, with a random jti.
func signAssertion(key crypto.Signer, alg, clientID, audience string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	if _, err := io.ReadFull(rand.Reader, jti); err != nil {
		return "", err
	}
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	var sig []byte
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if alg != "RS256" {
			return "", fmt.Errorf("oauth.signingAlgorithm %s does not fit an RSA key; use RS256", alg)
		}
		s, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		if err != nil {
			return "", err
		}
		sig = s
	case *ecdsa.PrivateKey:
		if alg != "ES256" || k.Curve.Params().BitSize != 256 {
			return "", fmt.Errorf("oauth.signingAlgorithm %s does not fit this EC key; use ES256 with a P-256 key", alg)
		}
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return "", err
		}
		// JWS wants r and s as two fixed 32-byte halves, not ASN.1.
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	default:
		return "", fmt.Errorf("oauth.privateKeyFile: an RSA or EC key is needed, not %T", key)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// readPrivateKey reads a PEM private key: PKCS#8, PKCS#1 (RSA) or SEC 1 (EC).
func readPrivateKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("oauth.privateKeyFile: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("oauth.privateKeyFile %s: no PEM block", path)
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("oauth.privateKeyFile %s: %w", path, errors.New("not a PKCS#8, PKCS#1 or EC private key"))
}
