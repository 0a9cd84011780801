package gateway

// The gateway's one config type (a composition entry's config, and what
// New is given) and its deps.

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/metricshttp"
	"github.com/dsh-host/dsh-host/internal/tokenfile"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Config is the config of a `gateway` entry.
type Config struct {
	// HTTP is the address (HOST:PORT) to serve Streamable HTTP on, at
	// /mcp; empty serves no listener.
	HTTP string `yaml:"http"`
	// TokenEnv names the environment variable holding the bearer token
	// every HTTP request must carry; required for a non-loopback address.
	TokenEnv string `yaml:"tokenEnv"`
	// TokenFile names a file holding that token instead (a mounted
	// container secret), read when the gateway starts (internal/tokenfile).
	TokenFile string `yaml:"tokenFile"`
	// TLS serves https with a certificate and key from files, reloaded
	// when they change (tls.go); nil serves plain http.
	TLS *TLSConfig `yaml:"tls"`
	// Limits are the HTTP listener's caps and session timeout
	// (maxConnections, maxSessions, sessionTimeout) and the caps on
	// requests in flight (maxCallsPerSession, maxCalls); see http.go.
	Limits `yaml:",inline"`
	// Raw serves the MCP servers' tools under their own names
	// (Origin.RawName) instead of the assembly: no prefix, no folding, and
	// no tool that is not an MCP server's. With one server, the gateway is
	// a faithful bridge to it; of two tools with one raw name, the first
	// registered is served.
	Raw bool `yaml:"raw"`
	// Stateless serves go-sdk's stateless Streamable HTTP: every request
	// stands alone (no Mcp-Session-Id is checked, GET and DELETE are 405),
	// so that several gateways can serve one client behind any load
	// balancer. A stateless gateway cannot send a client anything outside
	// the answer to its request: no list_changed notifications (clients
	// list again), no server-to-client requests (elicitation, sampling,
	// roots), no resource subscriptions. MaxSessions then caps the
	// requests in flight without a session.
	Stateless bool `yaml:"stateless"`
	// NameLimit is the longest tool name served, from MinNameLimit to 64
	// (0: DefaultNameLimit, 48); a longer one is fitted to it, stable and
	// distinct (tools.FitName). Clients add their own prefix
	// (mcp__<server>__ for Claude Code) to names that model APIs cap at 64
	// characters.
	NameLimit int `yaml:"nameLimit"`
	// DropMarker serves an MCP server's tools without the mcp__ marker
	// (<serverName>__<tool>): a client adds its own.
	DropMarker bool `yaml:"dropMarker"`
	// Auth makes the HTTP listener an OAuth 2.1 protected resource: it
	// accepts the access tokens of an issuer, and the caller of each
	// request is its token's identity (auth.go). The static token of
	// TokenEnv, when set too, keeps working for one person. With it, each
	// identity is served its own tools: the surface holds what any
	// identity may see, and each tools/list is narrowed to its caller's
	// (identity.go).
	Auth *AuthConfig `yaml:"auth"`
	// DrainTimeout bounds a drain (dsh-host serve --http at SIGTERM): how
	// long the requests in flight may take to finish before the gateway
	// stops anyway, such as "30s" (0: DefaultDrainTimeout).
	DrainTimeout time.Duration `yaml:"drainTimeout"`
	// ListWait bounds how long after the gateway's start its lists
	// (tools, resources, prompts) wait for the MCP servers starting with
	// it, such as "5s" (0: DefaultListWait); a server slower than that
	// comes with list_changed.
	ListWait time.Duration `yaml:"listWait"`
	// Metrics is the address (HOST:PORT) to serve the host's metrics on,
	// in Prometheus text format at /metrics, such as 127.0.0.1:9464;
	// empty serves none. It starts the listener a metrics entry starts
	// (plugins/metrics, whose config holds the metrics' options), with
	// its defaults; a composition has one or the other. It needs no
	// token: bind it where only the scraper reaches.
	Metrics string `yaml:"metrics"`
}

// Validate checks c, naming the offending key. A non-loopback address
// without a token is refused: it would hand every tool of the composition
// to anyone who can reach the port.
func (c *Config) Validate() error {
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if c.DrainTimeout < 0 {
		return fmt.Errorf("drainTimeout: %v is negative; omit it for the default (%v)", c.DrainTimeout, DefaultDrainTimeout)
	}
	if c.ListWait < 0 {
		return fmt.Errorf("listWait: %v is negative; omit it for the default (%v)", c.ListWait, DefaultListWait)
	}
	if c.NameLimit != 0 && (c.NameLimit < MinNameLimit || c.NameLimit > tools.MaxNameLen) {
		return fmt.Errorf("nameLimit %d: want %d to %d (or leave it out for %d): the longest tool name served, before a client's own prefix",
			c.NameLimit, MinNameLimit, tools.MaxNameLen, DefaultNameLimit)
	}
	if c.Metrics != "" {
		if err := metricshttp.CheckAddr(c.Metrics); err != nil {
			return host.KeyErrorf("metrics", "%v", err)
		}
	}
	if c.Auth != nil {
		if err := c.Auth.Validate(); err != nil {
			return err
		}
	}
	if c.TokenEnv != "" && c.TokenFile != "" {
		return fmt.Errorf("tokenEnv and tokenFile: both name the static token; keep one")
	}
	if c.TLS != nil {
		if err := c.TLS.Validate(); err != nil {
			return err
		}
	}
	if c.HTTP == "" {
		switch {
		case c.TokenFile != "":
			return fmt.Errorf("tokenFile: applies to http only; set http or remove tokenFile")
		case c.TLS != nil:
			return host.KeyErrorf("tls", "applies to http only; set http or remove tls")
		case c.Auth != nil:
			return host.KeyErrorf("auth", "applies to http only; set http or remove auth")
		case c.TokenEnv != "":
			return fmt.Errorf("tokenEnv: applies to http only; set http or remove tokenEnv")
		case c.Stateless:
			return fmt.Errorf("stateless: applies to http only; set http or remove stateless")
		}
		return nil
	}
	hostname, _, err := net.SplitHostPort(c.HTTP)
	if err != nil {
		return fmt.Errorf("http %q: want HOST:PORT, such as 127.0.0.1:8931: %w", c.HTTP, err)
	}
	if c.TokenEnv == "" && c.TokenFile == "" && c.Auth == nil && !bearer.LoopbackHost(hostname) {
		shown := hostname
		if shown == "" {
			shown = "every interface"
		}
		return fmt.Errorf("http %q: refusing to serve on %s without a token: a non-loopback address exposes every tool to the network; "+
			"name an environment variable holding a long random token in tokenEnv (dsh-host serve --token-env VAR) or a file holding it in tokenFile (--token-file FILE), configure auth (an OAuth issuer), or bind 127.0.0.1", c.HTTP, shown)
	}
	return nil
}

// MinTokenLen is the shortest token, in bytes, a non-loopback listener
// accepts: bearer's, which the metrics listener's token obeys too.
const MinTokenLen = bearer.MinStaticLen

// Token returns the bearer token HTTP requests must carry: the value of the
// variable TokenEnv names, or the content of TokenFile (tokenfile.Read), or
// "" without either. An unset or empty variable is an error, and so is a
// token shorter than MinTokenLen for a non-loopback address. No error
// shows the token.
func (c *Config) Token() (string, error) {
	var token, source string
	switch {
	case c.TokenFile != "":
		source = "tokenFile " + c.TokenFile
		var err error
		if token, err = tokenfile.Read(c.TokenFile); err != nil {
			return "", fmt.Errorf("%s: %w", source, err)
		}
	case c.TokenEnv != "":
		source = "tokenEnv " + c.TokenEnv
		var err error
		if token, err = tokenfile.FromEnv(c.TokenEnv); err != nil {
			return "", fmt.Errorf("tokenEnv %w", err)
		}
	default:
		return "", nil
	}
	if err := bearer.CheckStatic(token, c.HTTP); err != nil {
		return "", fmt.Errorf("%s: %w", source, err)
	}
	return token, nil
}

// Defaults of the HTTP listener's limits (Limits).
const (
	// DefaultMaxConnections caps the connections open at once; it is
	// lowered further to keep fdReserve descriptors free (maxConnections).
	DefaultMaxConnections = 512
	// DefaultMaxSessions caps the sessions alive at once.
	DefaultMaxSessions = 1000
	// DefaultSessionTimeout ends a session that has received no request
	// for this long (an open GET stream alone does not keep it alive:
	// clients that idle ping). Its client gets 404 and starts a new one.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxCallsPerSession caps the requests one session has in
	// flight at once (tools/call, resources/read and the like).
	DefaultMaxCallsPerSession = 32
	// DefaultMaxCalls caps the requests in flight at once over every
	// session of the gateway.
	DefaultMaxCalls = 256
)

// Limits are the gateway entry's limits on its HTTP listener. Zero means
// the default.
type Limits struct {
	// MaxConnections caps the connections open at once (default
	// DefaultMaxConnections, and at most half of what the descriptor limit
	// leaves after fdReserve). One more is answered 503 and closed.
	MaxConnections int `yaml:"maxConnections"`
	// MaxSessions caps the sessions alive at once (default
	// DefaultMaxSessions). One more initialize is answered 503.
	MaxSessions int `yaml:"maxSessions"`
	// SessionTimeout ends a session idle for this long, such as "30m"
	// (default DefaultSessionTimeout).
	SessionTimeout time.Duration `yaml:"sessionTimeout"`
	// MaxCallsPerSession caps the requests one session has in flight
	// (default DefaultMaxCallsPerSession); one more fails with an error
	// saying so.
	MaxCallsPerSession int `yaml:"maxCallsPerSession"`
	// MaxCalls caps the requests in flight over every session (default
	// DefaultMaxCalls).
	MaxCalls int `yaml:"maxCalls"`
	// MaxHeldAnswerBytes bounds the bytes of answers held at once for
	// clients that have not read them yet, over the whole listener
	// (default DefaultAnswerBudget, 64 MiB). An answer that would pass it
	// is replaced by a JSON-RPC error saying so.
	MaxHeldAnswerBytes int64 `yaml:"maxHeldAnswerBytes"`
	// MaxConnectionsPerCaller caps the connections one client address
	// has open at once (default a quarter of maxConnections); a trusted
	// proxy's connections are not capped so (callers.go).
	MaxConnectionsPerCaller int `yaml:"maxConnectionsPerCaller"`
	// MaxSessionsPerCaller caps the sessions one caller has open at once:
	// one identity with inbound OAuth, one client address otherwise
	// (default a quarter of maxSessions).
	MaxSessionsPerCaller int `yaml:"maxSessionsPerCaller"`
	// TrustedProxies are the IPs or CIDRs of the proxies in front of the
	// gateway (HAProxy, a TLS terminator): a request from one of them is
	// the caller's whose address X-Forwarded-For gives.
	TrustedProxies []string `yaml:"trustedProxies"`
}

// Validate checks l, naming the offending key.
func (l *Limits) Validate() error {
	switch {
	case l.MaxConnections < 0:
		return fmt.Errorf("maxConnections: %d is negative; omit it for the default (%d)", l.MaxConnections, DefaultMaxConnections)
	case l.MaxSessions < 0:
		return fmt.Errorf("maxSessions: %d is negative; omit it for the default (%d)", l.MaxSessions, DefaultMaxSessions)
	case l.SessionTimeout < 0:
		return fmt.Errorf("sessionTimeout: %v is negative; omit it for the default (%v)", l.SessionTimeout, DefaultSessionTimeout)
	case l.MaxCallsPerSession < 0:
		return fmt.Errorf("maxCallsPerSession: %d is negative; omit it for the default (%d)", l.MaxCallsPerSession, DefaultMaxCallsPerSession)
	case l.MaxCalls < 0:
		return fmt.Errorf("maxCalls: %d is negative; omit it for the default (%d)", l.MaxCalls, DefaultMaxCalls)
	case l.MaxHeldAnswerBytes < 0:
		return fmt.Errorf("maxHeldAnswerBytes: %d is negative; omit it for the default (%d, 64 MiB)", l.MaxHeldAnswerBytes, DefaultAnswerBudget)
	case l.MaxConnectionsPerCaller < 0:
		return fmt.Errorf("maxConnectionsPerCaller: %d is negative; omit it for the default (a quarter of maxConnections)", l.MaxConnectionsPerCaller)
	case l.MaxSessionsPerCaller < 0:
		return fmt.Errorf("maxSessionsPerCaller: %d is negative; omit it for the default (a quarter of maxSessions)", l.MaxSessionsPerCaller)
	case l.MaxHeldAnswerBytes > 0 && l.MaxHeldAnswerBytes < writeChunk:
		return fmt.Errorf("maxHeldAnswerBytes: %d is below %d, what one write always holds; omit it for the default (%d, 64 MiB)", l.MaxHeldAnswerBytes, writeChunk, DefaultAnswerBudget)
	}
	_, err := parseProxies(l.TrustedProxies)
	return err
}

// Deps are what a Gateway is given besides its Config: the services it
// serves and the process's logger and telemetry. The zero value (or nil)
// means defaults.
type Deps struct {
	// Implementation names the server to its clients (default "dsh-host"
	// at the binary's module version).
	Implementation *mcp.Implementation
	// Logger receives the gateway's logs (default: discarded).
	Logger *slog.Logger
	// CallerID distinguishes this gateway among callers of kind "gateway"
	// in the registry's hooks and logs.
	CallerID string
	// Mask, when non-nil, limits the tools the gateway's clients see and may
	// call.
	Mask *tools.Mask
	// Store resolves image references in results; nil sends images to
	// clients as a text notice.
	Store *attachments.Store
	// Resources, when non-nil, is the resources service whose resources,
	// templates, prompts and completion the gateway serves too
	// (resources.go, prompts.go).
	Resources *resources.Registry
	// Tracer, when not nil, traces every MCP request (a server span,
	// continuing the client's trace context from params._meta).
	Tracer trace.Tracer
	// Metrics, when not nil, reports the gateway's sessions, connections
	// and requests in flight, and counts the panics recovered.
	Metrics *Metrics
	// Debounce is the delay between a registry change and the re-assembly
	// (default DefaultDebounce); not a key of the entry: tests shorten it.
	Debounce time.Duration
}
