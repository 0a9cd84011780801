package gateway

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Key is the service a `gateway` instance provides: its running Gateway,
// for a front end that serves a session of its own on Server (dsh-host
// serve --stdio).
var Key = host.NewKey[*Gateway]("gateway")

// Config is the config of a `gateway` entry.
type Config struct {
	// HTTP is the address (HOST:PORT) to serve Streamable HTTP on, at
	// /mcp; empty serves no listener.
	HTTP string `yaml:"http"`
	// TokenEnv names the environment variable holding the bearer token
	// every HTTP request must carry; required for a non-loopback address.
	TokenEnv string `yaml:"tokenEnv"`
	// TokenFile names a file holding that token instead (a mounted
	// container secret), read when the gateway starts (tokenfile.go).
	TokenFile string `yaml:"tokenFile"`
	// TLS serves https with a certificate and key from files, reloaded
	// when they change (tls.go); nil serves plain http.
	TLS *TLSConfig `yaml:"tls"`
	// Limits are the HTTP listener's caps and session timeout
	// (maxConnections, maxSessions, sessionTimeout) and the caps on
	// requests in flight (maxCallsPerSession, maxCalls); see http.go.
	Limits `yaml:",inline"`
	// Raw serves the MCP servers' tools under their own names, unfolded
	// (Options.Raw): with one MCP server, a faithful bridge to it.
	Raw bool `yaml:"raw"`
	// Stateless serves stateless Streamable HTTP (HTTPOptions.Stateless),
	// for several gateways behind a load balancer.
	Stateless bool `yaml:"stateless"`
	// NameLimit is the longest tool name served, from MinNameLimit to 64
	// (0: DefaultNameLimit, 48); DropMarker serves MCP tools without their
	// mcp__ marker (Options).
	NameLimit  int  `yaml:"nameLimit"`
	DropMarker bool `yaml:"dropMarker"`
	// Auth makes the HTTP listener an OAuth 2.1 protected resource: it
	// accepts the access tokens of an issuer, and the caller of each
	// request is its token's identity (auth.go). The static token of
	// TokenEnv, when set too, keeps working for one person.
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
	// empty serves none. It needs no token: bind it where only the
	// scraper reaches.
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
		if _, _, err := net.SplitHostPort(c.Metrics); err != nil {
			return fmt.Errorf("metrics %q: want HOST:PORT, such as 127.0.0.1:9464: %w", c.Metrics, err)
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
	if c.TokenEnv == "" && c.TokenFile == "" && c.Auth == nil && !isLoopbackHost(hostname) {
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
// accepts: a short token is guessed by anyone who can reach the port
// (16 random bytes, as `openssl rand -hex 16` prints them, are 32).
const MinTokenLen = 16

// Token returns the bearer token HTTP requests must carry: the value of the
// variable TokenEnv names, or the content of TokenFile (readTokenFile), or
// "" without either. An unset or empty variable is an error, and so is a
// token shorter than MinTokenLen for a non-loopback address. No error
// shows the token.
func (c *Config) Token() (string, error) {
	var token, source string
	switch {
	case c.TokenFile != "":
		source = "tokenFile " + c.TokenFile
		var err error
		if token, err = readTokenFile(c.TokenFile); err != nil {
			return "", fmt.Errorf("%s: %w", source, err)
		}
	case c.TokenEnv != "":
		source = "tokenEnv " + c.TokenEnv
		if token = os.Getenv(c.TokenEnv); token == "" {
			return "", fmt.Errorf("tokenEnv %s: the variable is not set or empty; export a long random token in it", c.TokenEnv)
		}
	default:
		return "", nil
	}
	if hostname, _, err := net.SplitHostPort(c.HTTP); err == nil && !isLoopbackHost(hostname) && len(token) < MinTokenLen {
		return "", fmt.Errorf("%s: the token is %d bytes, too short for the non-loopback address %q: use at least %d random bytes, such as `openssl rand -hex 16`",
			source, len(token), c.HTTP, MinTokenLen)
	}
	return token, nil
}

// PluginName is the name composition entries use.
const PluginName = "gateway"

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "the composition's tools as one MCP server: Streamable HTTP at /mcp, or a front end's stdio",
		Inject:      []host.Dep{host.Require(tools.Key), host.Optional(attachments.Key), host.Optional(resources.Key)},
		Provides:    []host.AnyKey{Key},
		Validate:    (*Config).Validate,
		// The token is the gateway's: no MCP server the host starts
		// inherits the variable holding it, whatever its name.
		Secrets: func(c *Config) []string { return []string{c.TokenEnv} },
		Apply:   apply,
	})
}

// apply starts a gateway instance. A change of either injected service
// restarts the instance, so the gateway never rebinds: it serves the
// registry and store it started with.
func apply(s *host.Scope, cfg Config) error {
	token, err := cfg.Token()
	if err != nil {
		return err
	}
	reg := host.Get(s, tools.Key)
	store, _ := host.Lookup(s, attachments.Key)
	res, _ := host.Lookup(s, resources.Key)
	m, err := NewMetrics(s.Registerer())
	if err != nil {
		return err
	}
	g, err := New(s, reg, store, &Options{Logger: s.Logger(), CallerID: s.ID(), Raw: cfg.Raw, Resources: res,
		NameLimit: cfg.NameLimit, DropMarker: cfg.DropMarker,
		MaxCallsPerSession: cfg.MaxCallsPerSession, MaxCalls: cfg.MaxCalls, DrainTimeout: cfg.DrainTimeout, ListWait: cfg.ListWait,
		Tracer: s.Tracer(), Metrics: m, PerIdentity: cfg.Auth != nil})
	if err != nil {
		return err
	}
	detail := "no listener: serves a front end's session (dsh-host serve --stdio)"
	if cfg.HTTP != "" {
		o := serveOptions{token: token, limits: cfg.Limits, stateless: cfg.Stateless}
		if cfg.TLS != nil {
			if o.tls, err = newCertReloader(*cfg.TLS, s.Logger()); err != nil {
				return err
			}
		}
		if cfg.Auth != nil {
			o.auth = newAuthenticator(*cfg.Auth, token)
			s.OnDispose("gateway auth", o.auth.Close)
		}
		if detail, err = listen(s, g, cfg.HTTP, o); err != nil {
			return err
		}
	}
	if cfg.Metrics != "" {
		url, err := listenMetrics(s, s.Gatherer(), cfg.Metrics)
		if err != nil {
			return err
		}
		detail += "; metrics at " + url
	}
	s.SetDetail(detail)
	return host.Provide(s, Key, g)
}
