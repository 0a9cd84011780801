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
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/serve"
)

const serveAbout = `
Serve the composition's tools (folded or not, as the composition says) as one
MCP server. tools/call runs the registry's whole pipeline, so guards apply;
images reach the client as MCP image content. The composition file is watched:
an edit (or SIGHUP) that changes the tool surface sends
notifications/tools/list_changed to connected clients.

The server is the gateway plugin. serve adds a gateway entry configured by its
flags (id gateway, file "(command line)"), unless the composition declares a
gateway entry of its own: that one wins, as written, and --http,
--token-env, --token-file, --tls-cert, --tls-key, --raw, --stateless,
--name-limit, --drop-marker, --drain-timeout, --list-wait and --metrics are
ignored (the entry's keys tokenFile, tls, raw, stateless, nameLimit,
dropMarker, drainTimeout, listWait and metrics say the same).

  --stdio        for clients that start the gateway as a command (Claude Code,
                 Codex, VS Code); logs go to stderr only, stdout is the protocol,
                 at warn unless --log-level or DSH_LOG_LEVEL says otherwise
                 (clients show every stderr line as an error). The session
                 starts once the gateway is up: initialize waits at most
                 300 ms for the servers connecting, the first lists as
                 --list-wait says. A composition that does not load still
                 gets its client a session, which says what is wrong
                 (instructions, an error log message, every failed call)
                 until an edit of the file loads. The entry serve adds listens on no port. If a
                 reload restarts the gateway (its entry, or a service it
                 injects, changed), the session ends and serve exits 1: the
                 client must reconnect.
  --http ADDR    Streamable HTTP at http://ADDR/mcp (the default transport, on
                 ` + serve.DefaultHTTPAddr + `). A non-loopback ADDR requires --token-env
                 or --token-file.
                 Requests from a foreign browser Origin are refused (403).
                 /healthz (200 while the process answers) and /readyz (200
                 once the gateway serves every eager server's tools, or
                 its failure, and every lazy server's catalog, else 503
                 with the reason, and 503 while draining) answer beside
                 /mcp, without the token.
  --token-file FILE
                 the bearer token is FILE's one line (a mounted container
                 secret), read when the gateway starts; the trailing line
                 break is trimmed; an empty or unreadable file is an
                 error naming it. Restart (or edit the entry) to rotate it.
  --tls-cert FILE --tls-key FILE
                 serve https (TLS 1.2 or later) with this certificate chain
                 and private key (PEM); both files are read again at the
                 first connection after either changed, so a renewal needs
                 no restart. Behind a proxy that terminates TLS, leave them
                 out.
  --list-wait D  while the composition starts, tools/list, resources/list and
                 prompts/list wait up to D (default 5s, counted from the
                 gateway's start) for the eager MCP servers still connecting
                 (each at most its startupTimeoutMs) and for the lazy ones
                 without a catalog cache to list their tools, then answer
                 what is there; a server that comes later comes with
                 list_changed. For agent CLIs that list tools once, right
                 after initialize (Codex never lists again). initialize
                 does not wait for it.
  --drain-timeout D
                 at SIGTERM or SIGINT, --http drains first: /readyz fails,
                 new sessions and requests are refused (503), and the calls
                 in flight get D (default 30s; the entry's drainTimeout) to
                 finish before the gateway stops. A second signal ends the
                 drain at once. --stdio does not drain: a signal ends its
                 session and cancels its calls.
  --raw          serve the MCP server's tools under their own names, unfolded
                 and without the host's built-in tools: over a composition with
                 one mcp-client entry, a faithful stdio<->Streamable HTTP bridge
                 to that server, with hot reload. Two or more mcp-client
                 entries are a usage error (their names could collide).
  --name-limit N the longest tool name served (default 48): a longer one is
                 cut and ends with a hash of the tool's identity, so it stays
                 stable and distinct. Clients add their own prefix
                 (mcp__dsh__ in Claude Code) to names model APIs cap at 64.
  --drop-marker  serve an MCP server's tools as <server>__<tool>, without
                 the mcp__ marker, for clients that add a marker of their own.
  --stateless    stateless Streamable HTTP, so that several gateways can serve
                 behind any load balancer. A stateless gateway answers requests
                 and nothing else: no list_changed notifications, no
                 elicitation or sampling requests to the client, no resource
                 subscriptions.
  --metrics ADDR the host's metrics in Prometheus text format at
                 http://ADDR/metrics (such as 127.0.0.1:9464), on a listener
                 of their own, without the token: tool calls, errors and
                 latency per server, tool and outcome; MCP servers up and
                 reconnects; gateway sessions and connections; reloads;
                 policy decisions.

Most flags can come from the environment, for containers and systemd units;
a flag on the command line wins, and a bad value names the variable (see
"Environment" below; DSH_LOG_LEVEL sets --log-level, an unknown value
keeping the default).

Traces follow the standard OpenTelemetry variables: OTEL_TRACES_EXPORTER=otlp
or OTEL_EXPORTER_OTLP_ENDPOINT (http/protobuf, such as http://127.0.0.1:4318)
turns them on, OTEL_SERVICE_NAME names the service (default dsh-host); a
client's traceparent in a request's _meta continues into the MCP servers'.

The same gateway, declared in the composition (an edit of it moves the
listener):
  - id: gateway
    name: gateway
    config: {http: "127.0.0.1:8931", tokenEnv: GATEWAY_TOKEN}

Like run, serve answers on the composition's control socket (dsh-host
status, tools, call... attach to it); a second serve of the same file, as
two clients each start one, runs without it until the first stops.

Example, for a client's MCP configuration:
  {"command": "dsh-host", "args": ["serve", "--stdio", "-c", "/path/to/composition.yml"]}`

// cmdServe runs gateway mode until the client goes away (stdio), or until
// SIGINT or SIGTERM. As for run, a shutdown that is not clean exits 1.
func cmdServe(ctx context.Context, args []string, std Stdio) (code int) {
	fs := flagSet("serve", "[-c FILE] --stdio | --http ADDR [--token-env VAR | --token-file FILE] [flags]",
		serveAbout+"\n\nEnvironment (a flag given wins):\n"+envHelp(serveEnv))
	var common commonFlags
	common.register(fs, "info")
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
	bindEnv(fs, serveEnv)
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

	c, loadErr := hostrun.Load(common.file)
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
		c = &host.Composition{File: common.file}
	}
	if *raw {
		if servers := serve.MCPServers(c); len(servers) > 1 {
			return usageError(fs, std, "--raw serves one MCP server under its own names, and %s has %d: %s; serve them without --raw (prefixed), or compose one",
				common.file, len(servers), strings.Join(servers, ", "))
		}
	}
	if !levelSet {
		common.logLevel = serveLogLevel(*stdio, os.Getenv)
	}
	logger := hostrun.NewLogger(std.Err, common.logFormat, common.logLevel)
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
		logger.Warn("the composition declares a gateway entry, which wins: --http, --token-env, --token-file, --tls-cert, --tls-key, --raw, --stateless, --name-limit, --drop-marker, --drain-timeout, --list-wait and --metrics (and their DSH_ variables) are ignored", "file", common.file, "entry", id)
	}

	hup := hangups()
	defer signal.Stop(hup)
	cfg := serve.Config{File: common.file, GatewayID: id, Host: opts, Logger: logger,
		Shutdown: func(h *host.Host) bool { return hostrun.Shutdown(h, logger) },
		Started: func(ctx context.Context, h *host.Host) func() {
			stopFollow, stopControl := hostrun.Follow(ctx, h, common.file, hup, logger), serveControl(h, common.file, logger)
			return func() { stopControl(); stopFollow() }
		}}
	if *stdio {
		var problem string
		if loadErr != nil {
			problem = serve.NotApplied(common.file, loadErr, false)
			logger.Error("the composition is not applied; serving a session that says so, and watching the file", "file", common.file, "err", loadErr)
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
		_ = choice{&level, []string{"debug", "info", "warn", "error"}}.Set(v) // a bad value keeps the default
	}
	return level
}
