package main

// Gateway mode: `dsh-host serve` is the command-line front of the gateway
// plugin. It adds a gateway entry its flags configure (unless the
// composition declares one), runs the composition as run does, and for
// --stdio serves one session on the gateway the host provides.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/serve"
)

// serveEnv are serve's flags that the environment can give.
var serveEnv = serve.Env

// flagsFromEnv sets the flags the command line left unset from the
// environment (cli.FlagsFromEnv).
func flagsFromEnv(fs *flag.FlagSet, binds []cli.EnvFlag, getenv func(string) string, stdio bool) ([]string, error) {
	return cli.FlagsFromEnv(fs, binds, getenv, stdio)
}

// cmdServe runs gateway mode until the client goes away (stdio), or until
// SIGINT or SIGTERM. As for run, a shutdown that is not clean exits 1.
func cmdServe(ctx context.Context, args []string, std Stdio) (code int) {
	fs := flagSet("serve", "[-c FILE] --stdio | --http ADDR [--token-env VAR | --token-file FILE] [flags]",
		serve.About+"\n\nEnvironment (a flag given wins):\n"+cli.EnvHelp(serveEnv))
	var common commonFlags
	common.Register(fs, "info")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin/stdout")
	addr := fs.String("http", "", "serve MCP over Streamable HTTP on `ADDR` (default "+serve.DefaultHTTPAddr+")")
	tokenEnv := fs.String("token-env", "", "require the bearer token in the environment variable `VAR` (needed for a non-loopback --http address)")
	tokenFile := fs.String("token-file", "", "require the bearer token held in `FILE`, such as a mounted secret (instead of --token-env)")
	tlsCert := fs.String("tls-cert", "", "serve https with the certificate chain in `FILE` (PEM; with --tls-key)")
	tlsKey := fs.String("tls-key", "", "serve https with the private key in `FILE` (PEM; with --tls-cert)")
	raw := fs.Bool("raw", false, "serve the one MCP server's tools under their own names, unfolded")
	stateless := fs.Bool("stateless", false, "stateless Streamable HTTP (several gateways behind a load balancer)")
	nameLimit := fs.Int("name-limit", 0, fmt.Sprintf("serve tool names of at most `N` characters, %d to 64 (default %d), for clients that add their own prefix", serve.MinNameLimit, serve.DefaultNameLimit))
	dropMarker := fs.Bool("drop-marker", false, "serve MCP servers' tools as <server>__<tool>, without the mcp__ marker")
	metrics := fs.String("metrics", "", "serve metrics in Prometheus text format at /metrics on `ADDR`, such as 127.0.0.1:9464")
	drainTimeout := fs.Duration("drain-timeout", 0, fmt.Sprintf("at SIGTERM, give the requests in flight up to `D` to finish (default %v; --http only)", serve.DefaultDrainTimeout))
	listWait := fs.Duration("list-wait", 0, fmt.Sprintf("while the composition starts, lists wait up to `D` for the MCP servers connecting (default %v)", serve.DefaultListWait))
	cli.BindEnv(fs, serveEnv)
	fs.Lookup("log-level").Usage += " (env DSH_LOG_LEVEL)"
	rest, code, ok := parseArgs(fs, args, std)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(fs, std, "unexpected argument %q", rest[0])
	}
	if _, err := flagsFromEnv(fs, serveEnv, os.Getenv, *stdio); err != nil {
		fmt.Fprintf(std.Err, "dsh-host serve: %v\n", err)
		return exitUsage
	}
	serve.TuneGC(os.Getenv)
	httpSet, levelSet := false, false
	fs.Visit(func(f *flag.Flag) {
		httpSet = httpSet || f.Name == "http"
		levelSet = levelSet || f.Name == "log-level"
	})
	if *stdio && httpSet {
		return usageError(fs, std, "--stdio and --http exclude each other: pick one transport")
	}
	if *stdio && *tokenEnv != "" {
		return usageError(fs, std, "--token-env applies to --http only: a stdio client is the process that started the gateway")
	}
	if *stdio && *tokenFile != "" {
		return usageError(fs, std, "--token-file applies to --http only: a stdio client is the process that started the gateway")
	}
	if *stdio && (*tlsCert != "" || *tlsKey != "") {
		return usageError(fs, std, "--tls-cert and --tls-key apply to --http only")
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageError(fs, std, "--tls-cert and --tls-key go together: the certificate chain and its private key")
	}
	if *stdio && *drainTimeout != 0 {
		return usageError(fs, std, "--drain-timeout applies to --http only: a stdio session ends with its client")
	}
	if *drainTimeout < 0 {
		return usageError(fs, std, "--drain-timeout %v is negative", *drainTimeout)
	}
	if *listWait < 0 {
		return usageError(fs, std, "--list-wait %v is negative", *listWait)
	}
	if *stdio && *stateless {
		return usageError(fs, std, "--stateless applies to --http only: a stdio session is one client's")
	}
	if !*stdio && *addr == "" {
		*addr = serve.DefaultHTTPAddr
	}
	// The entry the flags make, decoded and validated as the host will,
	// before anything starts: what the flags say wrong is a usage error.
	flagEntry, err := serve.Flags{HTTP: *addr, TokenEnv: *tokenEnv, TokenFile: *tokenFile, TLSCert: *tlsCert, TLSKey: *tlsKey, Raw: *raw, Stateless: *stateless,
		NameLimit: *nameLimit, DropMarker: *dropMarker, DrainTimeout: *drainTimeout, ListWait: *listWait, Metrics: *metrics}.Entry()
	if err != nil {
		fmt.Fprintf(std.Err, "dsh-host serve: %v\n", err)
		return exitUsage
	}

	c, loadErr := hostrun.Load(common.File)
	if loadErr == nil && *stdio {
		loadErr = host.Check(c) // what the host would refuse to apply
	}
	if loadErr != nil {
		if !*stdio {
			return fail(std, "serve", loadErr)
		}
		// A client that started serve shows "connection closed" and
		// nothing else: it gets a session that says what is wrong, and
		// the file is watched until it loads.
		c = &host.Composition{File: common.File}
	}
	if *raw {
		if servers := serve.MCPServers(c); len(servers) > 1 {
			return usageError(fs, std, "--raw serves one MCP server under its own names, and %s has %d: %s; serve them without --raw (prefixed), or compose one",
				common.File, len(servers), strings.Join(servers, ", "))
		}
	}
	if !levelSet {
		common.LogLevel = serveLogLevel(*stdio, os.Getenv)
	}
	logger := hostrun.NewLogger(std.Err, common.LogFormat, common.LogLevel)
	opts := &host.Options{Logger: logger}
	defer startTelemetry(ctx, opts, logger)()
	id, err := serve.ComposedGateway(c)
	switch {
	case err != nil:
		return fail(std, "serve", err)
	case id == "":
		id = serve.GatewayID
		opts.Entries = []host.Entry{flagEntry}
	case httpSet || *tokenEnv != "" || *tokenFile != "" || *tlsCert != "" || *raw || *stateless || *nameLimit != 0 || *dropMarker || *drainTimeout != 0 || *listWait != 0 || *metrics != "":
		logger.Warn("the composition declares a gateway entry, which wins: --http, --token-env, --token-file, --tls-cert, --tls-key, --raw, --stateless, --name-limit, --drop-marker, --drain-timeout, --list-wait and --metrics (and their DSH_ variables) are ignored", "file", common.File, "entry", id)
	}

	hup := hangups()
	defer signal.Stop(hup)
	cfg := serve.Config{File: common.File, GatewayID: id, Host: opts, Logger: logger,
		Shutdown: func(h *host.Host) bool { return hostrun.Shutdown(h, logger) },
		Started: func(ctx context.Context, h *host.Host) func() {
			stopFollow, stopControl := hostrun.Follow(ctx, h, common.File, hup, logger), serveControl(h, common.File, logger)
			return func() { stopControl(); stopFollow() }
		}}
	if *stdio {
		var problem string
		if loadErr != nil {
			problem = serve.NotApplied(common.File, loadErr, false)
			logger.Error("the composition is not applied; serving a session that says so, and watching the file", "file", common.File, "err", loadErr)
		}
		return serveExit(std, serve.Stdio(ctx, c, cfg, problem, std.In, std.Out))
	}
	// The signals that stop serve are caught here too, from now on, so
	// that the second one, during the drain, ends the drain (main's own
	// catch gives the first back to the default, which would kill serve
	// without disposing of its servers).
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	return serveExit(std, serve.HTTP(ctx, c, cfg, signals))
}

// serveExit is serve's exit code for err: a failure the log holds already
// is not said again.
func serveExit(std Stdio, err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, serve.ErrLogged):
		return exitFail
	}
	return fail(std, "serve", err)
}

// serveLogLevel is serve's log level when --log-level is not given:
// DSH_LOG_LEVEL, else warn for --stdio (a client such as Claude Code shows
// every stderr line of its server as an error), else info.
func serveLogLevel(stdio bool, getenv func(string) string) string {
	level := "info"
	if stdio {
		level = "warn"
	}
	if v := getenv("DSH_LOG_LEVEL"); v != "" {
		_ = choice{Value: &level, Allowed: []string{"debug", "info", "warn", "error"}}.Set(v) // a bad value keeps the default
	}
	return level
}
