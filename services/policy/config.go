package policy

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/policy/rules"
)

// Config is the `policy` entry's config.
type Config struct {
	// Default is the action when no rule matches: allow (today's
	// behaviour, the default), ask or deny.
	Default string `yaml:"default"`
	// Rules are tried in order; the first that matches decides.
	Rules []rules.Rule `yaml:"rules"`
	// Audit is the trail of calls.
	Audit AuditConfig `yaml:"audit"`
	// Pins keeps the trusted definitions of MCP servers' tools.
	Pins PinsConfig `yaml:"pins"`
	// AskTimeout bounds how long an ask put to the web console waits
	// for its answer, such as "30s" (0: DefaultAskTimeout); then the
	// call is denied.
	AskTimeout time.Duration `yaml:"askTimeout"`
}

// PinsConfig is where trusted tool definitions are kept: one file per
// serverName. Each mcp-client entry's pin key says what a change does.
type PinsConfig struct {
	// Dir defaults to $DSH_HOME/pins.
	Dir string `yaml:"dir"`
}

// DefaultConfig is the config of the built-in instance: allow everything,
// as the host did before it had a policy.
func DefaultConfig() Config {
	return Config{Default: rules.Allow, Audit: AuditConfig{Enabled: true, Dir: dshhome.Default("audit"), MaxSize: audit.DefaultMaxSize, Keep: audit.DefaultKeep},
		Pins: PinsConfig{Dir: dshhome.Default("pins")}}
}

// ValidateConfig checks c and compiles its rules' CEL expressions; each
// problem names its key (rules[2].when).
func ValidateConfig(c *Config) error {
	var errs []error
	if c.Default == "" {
		c.Default = rules.Allow
	}
	if !slices.Contains(rules.Actions(), c.Default) {
		errs = append(errs, host.KeyErrorf("default", "unknown action %q; want %s", c.Default, strings.Join(rules.Actions(), ", ")))
	}
	if c.Audit.Enabled {
		if err := dshhome.CheckPath("audit.dir", c.Audit.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := dshhome.CheckPath("pins.dir", c.Pins.Dir); err != nil {
		errs = append(errs, err)
	}
	if c.Audit.MaxSize < 0 {
		errs = append(errs, host.KeyErrorf("audit.maxSize", "a size in bytes, 0 for the default (%d)", audit.DefaultMaxSize))
	}
	if c.Audit.Keep < 0 {
		errs = append(errs, host.KeyErrorf("audit.keep", "a number of rotated files, 0 for the default (%d)", audit.DefaultKeep))
	}
	switch {
	case c.AskTimeout < 0:
		errs = append(errs, host.KeyErrorf("askTimeout", "%v is negative; omit it for the default (%v)", c.AskTimeout, DefaultAskTimeout))
	case c.AskTimeout > askbroker.MaxTimeout:
		errs = append(errs, host.KeyErrorf("askTimeout", "%v is longer than an ask may wait (%v)", c.AskTimeout, askbroker.MaxTimeout))
	}
	errs = append(errs, rules.Check(c.Rules)...)
	// One flat join: the host places each *KeyError at its key's line.
	return errors.Join(errs...)
}
