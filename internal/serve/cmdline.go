package serve

// serve's command line: its flags, the environment that can give them,
// and the combinations that are usage errors.

import (
	"errors"
	"flag"
	"fmt"

	"github.com/dsh-host/dsh-host/internal/cli"
)

// CommandLine is what serve's flags say: the gateway entry's (Flags), the
// transport, and which were given.
type CommandLine struct {
	Flags
	Stdio bool
	// UI is the loopback address of the web console served beside the
	// gateway (--ui); empty serves none.
	UI string
	// HTTPSet and LevelSet say whether --http and --log-level were given
	// (on the command line or by the environment); Parsed sets them.
	HTTPSet, LevelSet bool
}

// Register adds serve's own flags to fs, and the environment variables
// that give them to their help.
func (c *CommandLine) Register(fs *flag.FlagSet) {
	fs.BoolVar(&c.Stdio, "stdio", false, "serve MCP over stdin/stdout")
	fs.StringVar(&c.HTTP, "http", "", "serve MCP over Streamable HTTP on `ADDR` (default "+DefaultHTTPAddr+")")
	fs.StringVar(&c.TokenEnv, "token-env", "", "require the bearer token in the environment variable `VAR` (needed for a non-loopback --http address)")
	fs.StringVar(&c.TokenFile, "token-file", "", "require the bearer token held in `FILE`, such as a mounted secret (instead of --token-env)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "serve https with the certificate chain in `FILE` (PEM; with --tls-key)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "serve https with the private key in `FILE` (PEM; with --tls-cert)")
	fs.BoolVar(&c.Raw, "raw", false, "serve the one MCP server's tools under their own names, unfolded")
	fs.BoolVar(&c.Stateless, "stateless", false, "stateless Streamable HTTP (several gateways behind a load balancer)")
	fs.IntVar(&c.NameLimit, "name-limit", 0, fmt.Sprintf("serve tool names of at most `N` characters, %d to 64 (default %d), for clients that add their own prefix", MinNameLimit, DefaultNameLimit))
	fs.BoolVar(&c.DropMarker, "drop-marker", false, "serve MCP servers' tools as <server>__<tool>, without the mcp__ marker")
	fs.StringVar(&c.Metrics, "metrics", "", "serve metrics in Prometheus text format at /metrics on `ADDR`, such as 127.0.0.1:9464")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 0, fmt.Sprintf("at SIGTERM, give the requests in flight up to `D` to finish (default %v; --http only)", DefaultDrainTimeout))
	fs.StringVar(&c.UI, "ui", "", "also serve the web console on this loopback `ADDR`, such as 127.0.0.1:0 (see dsh-host ui)")
	fs.DurationVar(&c.ListWait, "list-wait", 0, fmt.Sprintf("while the composition starts, lists wait up to `D` for the MCP servers connecting (default %v)", DefaultListWait))
}

// Parsed notes which flags fs was given, then checks they go together:
// the error is a usage error. With neither transport, --http is the
// default.
func (c *CommandLine) Parsed(fs *flag.FlagSet) error {
	fs.Visit(func(f *flag.Flag) {
		c.HTTPSet = c.HTTPSet || f.Name == "http"
		c.LevelSet = c.LevelSet || f.Name == "log-level"
	})
	switch {
	case c.Stdio && c.HTTPSet:
		return errors.New("--stdio and --http exclude each other: pick one transport")
	case c.Stdio && c.TokenEnv != "":
		return errors.New("--token-env applies to --http only: a stdio client is the process that started the gateway")
	case c.Stdio && c.TokenFile != "":
		return errors.New("--token-file applies to --http only: a stdio client is the process that started the gateway")
	case c.Stdio && (c.TLSCert != "" || c.TLSKey != ""):
		return errors.New("--tls-cert and --tls-key apply to --http only")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key go together: the certificate chain and its private key")
	case c.Stdio && c.DrainTimeout != 0:
		return errors.New("--drain-timeout applies to --http only: a stdio session ends with its client")
	case c.DrainTimeout < 0:
		return fmt.Errorf("--drain-timeout %v is negative", c.DrainTimeout)
	case c.ListWait < 0:
		return fmt.Errorf("--list-wait %v is negative", c.ListWait)
	case c.Stdio && c.Stateless:
		return errors.New("--stateless applies to --http only: a stdio session is one client's")
	}
	if !c.Stdio && c.HTTP == "" {
		c.HTTP = DefaultHTTPAddr
	}
	return nil
}

// GatewayFlagsGiven reports whether a flag of the gateway entry was given,
// which a gateway entry of the composition's own leaves ignored.
func (c *CommandLine) GatewayFlagsGiven() bool {
	return c.HTTPSet || c.TokenEnv != "" || c.TokenFile != "" || c.TLSCert != "" || c.Raw || c.Stateless || c.NameLimit != 0 || c.DropMarker || c.DrainTimeout != 0 || c.ListWait != 0 || c.Metrics != ""
}

// LogLevel is serve's log level when --log-level is not given:
// DSH_LOG_LEVEL, else warn for --stdio (a client such as Claude Code shows
// every stderr line of its server as an error), else info.
func LogLevel(stdio bool, getenv func(string) string) string {
	level := "info"
	if stdio {
		level = "warn"
	}
	if v := getenv("DSH_LOG_LEVEL"); v != "" {
		_ = cli.Choice{Value: &level, Allowed: []string{"debug", "info", "warn", "error"}}.Set(v) // a bad value keeps the default
	}
	return level
}
