// Package metrics is the metrics plugin: it serves the host's metrics in
// Prometheus text format at /metrics, on a listener of its own, so that
// `dsh-host run` and `dsh-host serve` serve them alike. A gateway entry's
// metrics key (and serve --metrics) starts the same listener with this
// plugin's defaults; a composition serves the host's metrics once.
//
//	plugins:
//	  - id: metrics
//	    name: metrics
//	    config:
//	      listen: 127.0.0.1:9464
package metrics

import (
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/metricshttp"
)

// PluginName is the name composition entries use.
const PluginName = "metrics"

// Config is the config of a metrics entry. It holds every option of the
// host's metrics: the listener's, and those of the series themselves.
type Config struct {
	// Listen is the address (HOST:PORT) to serve /metrics on, such as
	// 127.0.0.1:9464. It needs no token: bind it where only the scraper
	// reaches (a non-loopback address is served with a warning).
	Listen string `yaml:"listen"`

	// The options of the series (a cap on a label's values, bounds on
	// the series kept) go here, beside the listener's.
}

// Validate checks c, naming the offending key.
func (c *Config) Validate() error {
	if c.Listen == "" {
		return host.KeyErrorf("listen", "required: the address to serve /metrics on, such as 127.0.0.1:9464")
	}
	if err := metricshttp.CheckAddr(c.Listen); err != nil {
		return host.KeyErrorf("listen", "%v", err)
	}
	return nil
}

func init() {
	host.Register(host.Definition[Config]{
		Name:        PluginName,
		Description: "the host's metrics in Prometheus text format at /metrics",
		Validate:    (*Config).Validate,
		Claims:      func(*Config) []host.Claim { return []host.Claim{metricshttp.Claim("listen")} },
		Apply:       apply,
	})
}

func apply(s *host.Scope, cfg Config) error {
	url, err := metricshttp.Listen(s, s.Gatherer(), cfg.Listen)
	if err != nil {
		return host.KeyErrorf("listen", "%v", err)
	}
	s.SetDetail("metrics at " + url)
	return nil
}
