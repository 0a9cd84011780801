package mcpclient

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/bridge"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/oauth"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/logins"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/tools"
)

// PluginName is the name composition entries use.
const PluginName = "mcp-client"

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "One MCP server per instance: its tools become mcp__<serverName>__<tool>.",
		Inject:      append([]host.Dep{host.Require(tools.Key), host.Optional(attachments.Key), host.Optional(elicit.Key), host.Optional(outputs.Key), host.Optional(logins.Key)}, bridge.Deps()...),
		Defaults:    Defaults,
		Validate:    func(cfg *Config) error { return cfg.Validate() },
		// Tools are named after the server: one name, one instance, and
		// the tools of that name its (host.Owner), failed or not.
		Claims: func(cfg *Config) []host.Claim {
			return []host.Claim{{Kind: "serverName", Value: cfg.ServerName, Key: "serverName", ToolPrefix: toolset.PublicPrefix(cfg.ServerName)}}
		},
		Lazy:  func(cfg *Config) bool { return cfg.Startup == StartupLazy },
		Apply: apply,
		// Ready once its tools are registered (ready.go); an edit starts
		// the new server beside the old one, whose serverName claim and
		// tools move to the new one when it is ready.
		ReportsReady: true,
		Overlap:      true,
	})
}

// apply adapts the host's instance to the client core.
func apply(s *host.Scope, cfg Config) error {
	reg := host.Get(s, tools.Key)
	var extra bridge.Options
	extra.Lookup(s)
	store, _ := host.Lookup(s, attachments.Key)
	elicitation, _ := host.Lookup(s, elicit.Key)
	output, _ := host.Lookup(s, outputs.Key)
	cfg.Cwd = host.EntryPath(s.EntryFile(), cfg.Cwd)
	factory, cleanup := newTransportFactory(&cfg, s.Logger(), s.Environ)
	s.OnDispose("mcp-client transport", func() error { cleanup(); return nil })
	var login *oauth.Handler
	if cfg.Transport == TransportStreamableHTTP && !hasHeader(cfg.Headers, "Authorization") {
		reg, _ := host.Lookup(s, logins.Key)
		var browser func() *logins.BrowserStep
		if reg != nil {
			browser = reg.Browser
		}
		login = oauth.New(oauthServer(&cfg), browser, s.Logger())
		bare := factory
		factory = func() mcp.Transport { return login.Attach(bare()) }
		s.OnDispose("mcp-client oauth", func() error { login.Close(); return nil })
		if reg != nil {
			offerLogin(s, reg, cfg, login)
		}
	}
	_, err := start(s, options{
		cfg:       cfg,
		registry:  reg,
		extra:     extra,
		store:     store,
		elicit:    elicitation,
		output:    output,
		transport: factory,
		oauth:     login,
		// The catalog cache lives under $DSH_HOME (catalog.go).
		catalogDir: defaultCatalogDir(),
	})
	return err
}

// start runs a client on s: it adds the server's instructions to prompt
// assembly, starts the supervisor and waits for the first connection
// attempt (bounded by startupTimeoutMs). The tools are registered on s;
// opt.logger and detail default to s's. The host keeps serverNames unique (Claims).
func start(s *host.Scope, opt options) (*client, error) {
	opt.scope = s
	s.SetTransport(opt.cfg.Transport)
	if opt.logger == nil {
		opt.logger = s.Logger()
	}
	if opt.detail == nil {
		opt.detail = s.SetDetail
	}
	c := newClient(opt)
	c.tracer = s.Tracer()
	var err error
	if c.upstream, err = newUpstreamMetrics(s.Registerer(), c.opt.cfg.ServerName); err != nil {
		return c, err
	}
	opt.registry.OnAssemble(s, c.assemble)
	if opt.output != nil {
		if err := opt.output.Hold(s); err != nil {
			return c, err
		}
	}
	extra := opt.extra
	extra.Server, extra.Label, extra.Log, extra.Scope = c.opt.cfg.ServerName, c.label, c.opt.logger, s
	extra.ListTimeout, extra.RequestTimeout, extra.Store = ms(c.opt.cfg.StartupTimeoutMs), ms(c.opt.cfg.ToolCallTimeoutMs), opt.store
	b, err := bridge.New(extra, link{c})
	if err != nil {
		return c, err
	}
	c.bridge = b
	watchStartup(s, c.label, c.opt.cfg.StartupTimeoutMs)
	s.Go("mcp-client supervisor", c.run)
	select {
	case <-c.first.ready:
	case <-s.Context().Done():
		return c, s.Context().Err()
	}
	if c.first.err != nil {
		// The instance's error: the host and every front end name the
		// instance before it, so it does not name it again.
		return c, fmt.Errorf("initial connection or tool synchronization failed: %w", c.first.err)
	}
	return c, nil
}
