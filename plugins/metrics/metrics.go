// Package metrics is the metrics plugin: it serves the host's metrics in
// Prometheus text format at /metrics, on a listener of its own, so that
// `dsh-host run` and `dsh-host serve` serve them alike, and bounds the
// series the tool registry counts. A gateway entry's metrics key (and
// serve --metrics) starts the same listener with this plugin's defaults;
// a composition serves the host's metrics once.
//
//	plugins:
//	  - id: metrics
//	    name: metrics
//	    config:
//	      listen: 0.0.0.0:9464
//	      tokenEnv: METRICS_TOKEN
//	      toolLabelLimit: 100
package metrics

import (
	"fmt"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/metricshttp"
	"github.com/dsh-host/dsh-host/internal/tokenfile"
	"github.com/dsh-host/dsh-host/services/tools"
)

// PluginName is the name composition entries use.
const PluginName = "metrics"

// Config is the config of a metrics entry. It holds every option of the
// host's metrics: the listener's, and those of the series themselves.
type Config struct {
	// Listen is the address (HOST:PORT) to serve /metrics on, such as
	// 127.0.0.1:9464.
	Listen string `yaml:"listen"`
	// TokenEnv names the environment variable holding the bearer token a
	// scrape must carry (Authorization: Bearer TOKEN); TokenFile names a
	// file holding it instead. Without either, a non-loopback address is
	// served with a warning.
	TokenEnv  string `yaml:"tokenEnv"`
	TokenFile string `yaml:"tokenFile"`
	// ToolLabel is "name" (the default: the tool calls' series are
	// labelled by server and tool) or "none" (by server only).
	ToolLabel string `yaml:"toolLabel"`
	// ToolLabelLimit, when above 0, gives at most that many tools their
	// own tool label; the calls of the others count as tool="other".
	ToolLabelLimit int `yaml:"toolLabelLimit"`
}

// The values of toolLabel.
const (
	toolLabelName = "name"
	toolLabelNone = "none"
)

// Validate checks c, naming the offending key.
func (c *Config) Validate() error {
	if c.Listen == "" {
		return host.KeyErrorf("listen", "required: the address to serve /metrics on, such as 127.0.0.1:9464")
	}
	if err := metricshttp.CheckAddr(c.Listen); err != nil {
		return host.KeyErrorf("listen", "%v", err)
	}
	if c.TokenEnv != "" && c.TokenFile != "" {
		return host.KeyErrorf("tokenFile", "tokenEnv names the token already; keep one")
	}
	switch c.ToolLabel {
	case "", toolLabelName:
	case toolLabelNone:
		if c.ToolLabelLimit != 0 {
			return host.KeyErrorf("toolLabelLimit", "toolLabel none has no tool label to limit; keep one of the two")
		}
	default:
		return host.KeyErrorf("toolLabel", "%q: want name (a tool label per tool, the default) or none (by server only)", c.ToolLabel)
	}
	if c.ToolLabelLimit < 0 {
		return host.KeyErrorf("toolLabelLimit", "%d: want a number of tools above 0 (the others count as tool=\"other\"), or leave it out for no limit", c.ToolLabelLimit)
	}
	return nil
}

// toolLabel is the registry's policy c asks for.
func (c *Config) toolLabel() tools.ToolLabel {
	return tools.ToolLabel{None: c.ToolLabel == toolLabelNone, Limit: c.ToolLabelLimit}
}

// token returns the bearer token scrapes must carry ("" for none), naming
// the key whose source fails. Beyond loopback it is as long as the
// gateway's must be (bearer.CheckStatic). No error shows the token.
func (c *Config) token() (string, error) {
	var token, key string
	switch {
	case c.TokenFile != "":
		key = "tokenFile"
		var err error
		if token, err = tokenfile.Read(c.TokenFile); err != nil {
			return "", host.KeyErrorf(key, "%s: %w", c.TokenFile, err)
		}
	case c.TokenEnv != "":
		key = "tokenEnv"
		var err error
		if token, err = tokenfile.FromEnv(c.TokenEnv); err != nil {
			return "", host.KeyErrorf(key, "%w", err)
		}
	default:
		return "", nil
	}
	if err := bearer.CheckStatic(token, c.Listen); err != nil {
		return "", host.KeyErrorf(key, "%w", err)
	}
	return token, nil
}

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "the host's metrics in Prometheus text format at /metrics, and bounds on their series",
		// The tool registry counts the tool calls whose series it bounds;
		// without one, the host's other metrics are served all the same.
		Inject:   []host.Dep{host.Optional(tools.Key)},
		Validate: (*Config).Validate,
		Claims:   func(*Config) []host.Claim { return []host.Claim{metricshttp.Claim("listen")} },
		// No MCP server the host starts inherits the scrape token.
		Secrets: func(c *Config) []string { return []string{c.TokenEnv} },
		Apply:   apply,
	})
}

func apply(s *host.Scope, cfg Config) error {
	token, err := cfg.token()
	if err != nil {
		return err
	}
	key := "toolLabel"
	if cfg.ToolLabelLimit > 0 {
		key = "toolLabelLimit"
	}
	if reg, ok := host.Lookup(s, tools.Key); ok {
		if err := reg.LabelTools(s, cfg.toolLabel()); err != nil {
			return host.KeyErrorf(key, "%v", err)
		}
	}
	url, err := metricshttp.Listen(s, s.Gatherer(), cfg.Listen, token)
	if err != nil {
		return host.KeyErrorf("listen", "%v", err)
	}
	detail := "metrics at " + url
	if l := cfg.toolLabel(); l != (tools.ToolLabel{}) {
		detail = fmt.Sprintf("%s; %s", l, detail)
	}
	s.SetDetail(detail)
	return nil
}
