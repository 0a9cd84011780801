package gateway

import (
	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/metricshttp"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Key is the service a `gateway` instance provides: its running Gateway,
// for a front end that serves a session of its own on Server (dsh-host
// serve --stdio).
var Key = host.NewKey[*Gateway]("gateway")

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
		// The metrics key starts the host's one metrics listener, which a
		// metrics entry would start too.
		Claims: func(c *Config) []host.Claim {
			if c.Metrics == "" {
				return nil
			}
			return []host.Claim{metricshttp.Claim("metrics")}
		},
		Apply: apply,
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
	g, err := New(s, reg, &cfg, &Deps{Logger: s.Logger(), CallerID: s.ID(), Store: store, Resources: res,
		Tracer: s.Tracer(), Metrics: m})
	if err != nil {
		return err
	}
	detail := "no listener: serves a front end's session (dsh-host serve --stdio)"
	if cfg.HTTP != "" {
		o := serveOptions{token: token}
		if cfg.TLS != nil {
			if o.tls, err = newCertReloader(*cfg.TLS, s.Logger()); err != nil {
				return err
			}
		}
		if cfg.Auth != nil {
			o.auth = newOAuth(*cfg.Auth, bearer.Options{StaticToken: token})
			s.OnDispose("gateway auth", o.auth.verifier.Close)
		}
		if detail, err = listen(s, g, cfg.HTTP, o); err != nil {
			return err
		}
		s.SetEndpoint(detail) // the URL, typed for front ends (serve)
	}
	if cfg.Metrics != "" {
		url, err := metricshttp.Listen(s, s.Gatherer(), cfg.Metrics, "")
		if err != nil {
			return host.KeyErrorf("metrics", "%v", err)
		}
		detail += "; metrics at " + url
	}
	s.SetDetail(detail)
	return host.Provide(s, Key, g)
}
