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
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// defaultHTTPAddr is where `serve` listens when no transport is named.
const defaultHTTPAddr = "127.0.0.1:8931"

// gatewayID is the id of the entry serve adds: its plugin's name.
const gatewayID = gateway.PluginName

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
                 ` + defaultHTTPAddr + `). A non-loopback ADDR requires --token-env
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

// serveMemoryLimit is serve's soft memory limit (GOMEMLIMIT) unless the
// environment sets one.
const serveMemoryLimit = 256 << 20

// tuneGC sets the garbage collector for a gateway, where the environment
// (getenv) leaves GOGC or GOMEMLIMIT unset.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		// A gateway's garbage is mostly go-sdk's short-lived JSON buffers
		// (about seven 32 KiB ones per proxied call) over a small live
		// heap: collecting at 5x the live heap instead of 2x cuts the GC
		// work that bounds its throughput, for a few MiB more memory.
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		// GOGC=400 alone lets the heap grow to five times the live one:
		// twenty clients holding 7 MB answers they never read took it to
		// 760 MB over a 180 MB live heap. The soft limit collects as often
		// as needed past serveMemoryLimit and leaves small heaps to GOGC.
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}

// cmdServe runs gateway mode until the client goes away (stdio), or until
// SIGINT or SIGTERM. As for run, a shutdown that is not clean exits 1.
func cmdServe(ctx context.Context, args []string, std Stdio) (code int) {
	fs := flagSet("serve", "[-c FILE] --stdio | --http ADDR [--token-env VAR | --token-file FILE] [flags]",
		serveAbout+"\n\nEnvironment (a flag given wins):\n"+envHelp(serveEnv))
	var common commonFlags
	common.register(fs, "info")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin/stdout")
	addr := fs.String("http", "", "serve MCP over Streamable HTTP on `ADDR` (default "+defaultHTTPAddr+")")
	tokenEnv := fs.String("token-env", "", "require the bearer token in the environment variable `VAR` (needed for a non-loopback --http address)")
	tokenFile := fs.String("token-file", "", "require the bearer token held in `FILE`, such as a mounted secret (instead of --token-env)")
	tlsCert := fs.String("tls-cert", "", "serve https with the certificate chain in `FILE` (PEM; with --tls-key)")
	tlsKey := fs.String("tls-key", "", "serve https with the private key in `FILE` (PEM; with --tls-cert)")
	raw := fs.Bool("raw", false, "serve the one MCP server's tools under their own names, unfolded")
	stateless := fs.Bool("stateless", false, "stateless Streamable HTTP (several gateways behind a load balancer)")
	nameLimit := fs.Int("name-limit", 0, fmt.Sprintf("serve tool names of at most `N` characters, %d to 64 (default %d), for clients that add their own prefix", gateway.MinNameLimit, gateway.DefaultNameLimit))
	dropMarker := fs.Bool("drop-marker", false, "serve MCP servers' tools as <server>__<tool>, without the mcp__ marker")
	metrics := fs.String("metrics", "", "serve metrics in Prometheus text format at /metrics on `ADDR`, such as 127.0.0.1:9464")
	drainTimeout := fs.Duration("drain-timeout", 0, fmt.Sprintf("at SIGTERM, give the requests in flight up to `D` to finish (default %v; --http only)", gateway.DefaultDrainTimeout))
	listWait := fs.Duration("list-wait", 0, fmt.Sprintf("while the composition starts, lists wait up to `D` for the MCP servers connecting (default %v)", gateway.DefaultListWait))
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
	tuneGC(os.Getenv)
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
		*addr = defaultHTTPAddr
	}
	// The entry the flags make, decoded and validated as the host will,
	// before anything starts: what the flags say wrong is a usage error.
	flagEntry := host.Entry{ID: gatewayID, Name: gateway.PluginName, File: "(command line)"}
	var err error
	var tlsConfig *gateway.TLSConfig
	if *tlsCert != "" {
		tlsConfig = &gateway.TLSConfig{Cert: *tlsCert, Key: *tlsKey}
	}
	flagEntry.Config, err = entryConfig(gateway.Config{HTTP: *addr, TokenEnv: *tokenEnv, TokenFile: *tokenFile, TLS: tlsConfig, Raw: *raw, Stateless: *stateless,
		NameLimit: *nameLimit, DropMarker: *dropMarker, DrainTimeout: *drainTimeout, ListWait: *listWait, Metrics: *metrics}, gateway.Config{})
	if err == nil {
		var cfg *gateway.Config
		if cfg, err = host.Decode[gateway.Config](&flagEntry); err == nil {
			_, err = cfg.Token()
		}
	}
	if err != nil {
		fmt.Fprintf(std.Err, "dsh-host serve: %v\n", err)
		return exitUsage
	}

	c, loadErr := loadComposition(common.file)
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
		if servers := mcpServers(c); len(servers) > 1 {
			return usageError(fs, std, "--raw serves one MCP server under its own names, and %s has %d: %s; serve them without --raw (prefixed), or compose one",
				common.file, len(servers), strings.Join(servers, ", "))
		}
	}
	if !levelSet {
		common.logLevel = serveLogLevel(*stdio, os.Getenv)
	}
	logger := newLogger(std.Err, common.logFormat, common.logLevel)
	opts := &host.Options{Logger: logger}
	defer startTelemetry(ctx, opts, logger)()
	id, err := composedGateway(c)
	switch {
	case err != nil:
		return fail(std, "serve", err)
	case id == "":
		id = gatewayID
		opts.Entries = []host.Entry{flagEntry}
	case httpSet || *tokenEnv != "" || *tokenFile != "" || *tlsCert != "" || *raw || *stateless || *nameLimit != 0 || *dropMarker || *drainTimeout != 0 || *listWait != 0 || *metrics != "":
		logger.Warn("the composition declares a gateway entry, which wins: --http, --token-env, --token-file, --tls-cert, --tls-key, --raw, --stateless, --name-limit, --drop-marker, --drain-timeout, --list-wait and --metrics (and their DSH_ variables) are ignored", "file", common.file, "entry", id)
	}

	hup := hangups()
	defer signal.Stop(hup)
	if *stdio {
		var problem string
		if loadErr != nil {
			problem = notApplied(common.file, loadErr, false)
			logger.Error("the composition is not applied; serving a session that says so, and watching the file", "file", common.file, "err", loadErr)
		}
		return serveStdioHost(ctx, c, opts, id, common.file, problem, hup, std, logger)
	}
	// The signals that stop serve are caught here too, from now on, so
	// that the second one, during the drain, ends the drain (main's own
	// catch gives the first back to the default, which would kill serve
	// without disposing of its servers).
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	h, err := startHost(ctx, c, opts, nil)
	defer func() {
		if !shutdownHost(h, logger) && code == exitOK {
			code = exitFail
		}
	}()
	// Before the shutdown: a signal during it kills serve, as in run.
	defer signal.Stop(signals)
	if err != nil {
		if ctx.Err() != nil {
			return exitOK // stopped while starting, as run
		}
		return fail(std, "serve", err)
	}
	defer follow(ctx, h, common.file, hup, logger)()
	defer serveControl(h, common.file, logger)()

	switch st := host.Find(h.Status(), id); st.State {
	case host.StateFailed:
		return fail(std, "serve", fmt.Errorf("the gateway (entry %q) failed: %s", id, st.Err))
	case host.StateDisabled:
		return fail(std, "serve", fmt.Errorf("the gateway entry %q is disabled in %s: enable it, or remove it to serve as the flags say", id, common.file))
	case host.StatePending:
		logger.Warn("the gateway waits for a service; see the host's status above, or run dsh-host check", "entry", id, "waiting", st.Err)
	}
	// The gateway listens from its start; serve says it is ready once the
	// whole composition has started.
	if st := host.Find(h.Status(), id); st.State == host.StateActive {
		if st.Endpoint != "" {
			logger.Info("serving MCP over Streamable HTTP", "url", st.Endpoint, "entry", id)
		} else {
			logger.Warn("the gateway has no listener: its entry has no http address; give it one, or serve with --stdio", "entry", id)
		}
	}
	<-ctx.Done()
	drainGateway(h, signals, logger)
	logger.Info("shutting down the gateway")
	return exitOK
}

// drainGateway drains the host's gateway (gateway.Drain): /readyz fails,
// new sessions and requests are refused, and the requests in flight have
// the gateway's drain timeout to finish. signals holds the signal that
// stopped serve; a second one ends the drain at once, and gives the
// signals back to their default (a third kills the process).
func drainGateway(h *host.Host, signals chan os.Signal, logger *slog.Logger) {
	g, ok := host.Lookup(h, gateway.Key)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.DrainTimeout())
	defer cancel()
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		for n := 0; n < 2; {
			select {
			case <-signals:
				n++
			case <-ctx.Done():
				return
			}
		}
		signal.Stop(signals)
		logger.Warn("second signal: ending the drain now; the requests in flight are cut")
		cancel()
	}()
	start := time.Now()
	left := g.Drain(ctx)
	cancel()
	<-cut
	if left > 0 {
		// Cut answers each: 503 before its answer began, an error saying
		// the gateway stops on a begun event stream.
		refused := g.Cut()
		logger.Warn("the drain ended with requests in flight; they are cut", "inFlight", left, "answered503", refused, "after", time.Since(start).Round(time.Millisecond), "drainTimeout", g.DrainTimeout())
		return
	}
	logger.Info("drained: no request in flight", "after", time.Since(start).Round(time.Microsecond))
}

// composedGateway returns the id of c's own gateway entry, or "" when it
// has none.
func composedGateway(c *host.Composition) (string, error) {
	for _, e := range c.Entries {
		if e.Name == gateway.PluginName {
			return e.ID, nil
		}
	}
	for _, e := range c.Entries {
		if e.ID == gatewayID {
			return "", fmt.Errorf("%s:%d: entry %q is a %s, and serve adds its gateway under that id: rename the entry", e.File, e.Line, e.ID, e.Name)
		}
	}
	return "", nil
}

// mcpServers names c's enabled mcp-client entries (id, file and line).
func mcpServers(c *host.Composition) []string {
	var out []string
	for _, e := range c.Entries {
		if e.Name == mcpclient.PluginName && !e.Disabled {
			out = append(out, fmt.Sprintf("%q (%s:%d)", e.ID, e.File, e.Line))
		}
	}
	return out
}

// entryConfig is cfg as a composition entry holds it, in its type's own
// YAML keys, without the fields equal to zero's (where the config is
// decoded from: they say nothing).
func entryConfig(cfg, zero any) (map[string]any, error) {
	n, err := minimal(cfg, zero)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
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

// notApplied is what a client of serve is told when the composition file
// does not load: at start (running false: nothing of it runs), or at an
// edit (the composition before it runs on).
func notApplied(file string, err error, running bool) string {
	if running {
		return fmt.Sprintf("dsh-host: the last edit of %s is not applied, and the composition before it runs on: %v", file, err)
	}
	return fmt.Sprintf("dsh-host: the composition %s is not applied, so no tool of it is served: %v. Fix the file: it is watched, and the fix applies without restarting this client.", file, err)
}

// serveStdioHost runs the host for serve --stdio: the session starts as
// soon as the gateway is up, while the rest of the composition is still
// starting (a client gives its server little time to answer initialize,
// and the gateway announces what comes later). problem, if not empty, is
// what is wrong with the composition: c is then empty, and the session
// says so until an edit of the file loads.
func serveStdioHost(ctx context.Context, c *host.Composition, opts *host.Options, id, file, problem string, hup <-chan os.Signal, std Stdio, logger *slog.Logger) (code int) {
	h := host.New(opts)
	observeHost(h, opts)
	starting, stopStarting := context.WithCancel(ctx)
	var stopFollow, stopControl func()
	started := make(chan struct{})
	go func() {
		defer close(started)
		// Update returns when every instance has settled, or at once
		// when serve ends first.
		if err := h.Update(starting, c); err != nil {
			if starting.Err() == nil {
				logger.Error("the composition did not start", "file", file, "err", err)
			}
			return
		}
		if st := host.Find(h.Status(), id); st.State == host.StatePending {
			logger.Warn("the gateway waits for a service; see the host's status above, or run dsh-host check", "entry", id, "waiting", st.Err)
		}
		stopFollow = follow(starting, h, file, hup, logger)
		stopControl = serveControl(h, file, logger)
	}()
	defer func() {
		stopStarting()
		<-started
		if stopControl != nil {
			stopControl()
		}
		if stopFollow != nil {
			stopFollow()
		}
		if !shutdownHost(h, logger) && code == exitOK {
			code = exitFail
		}
	}()
	// The composition has started once every entry of it has settled
	// (the first update may not have added them all yet, and an entry
	// waits on its services before it starts: pending, for a moment).
	unsettled := func(state host.State) bool {
		return state == "" || state == host.StateStarting || state == host.StatePending
	}
	settled := func(st []host.InstanceStatus) bool {
		select {
		case <-started:
			return true
		default:
		}
		for _, e := range c.Entries {
			if !e.Disabled && unsettled(host.Find(st, e.ID).State) {
				return false
			}
		}
		return !slices.ContainsFunc(st, func(s host.InstanceStatus) bool { return s.State == host.StateStarting })
	}
	return serveStdio(ctx, h, started, settled, id, file, problem, std, logger)
}

// followProblems tells g's clients what is wrong with the composition as
// the watcher finds it (after problem, set already), until ctx ends: a file that
// does not load, and an edit not applied; a load clears it.
func followProblems(ctx context.Context, h *host.Host, g *gateway.Gateway, file, problem string) {
	running := problem == ""
	seen := h.Reloads()
	for {
		var now host.ReloadStats
		err := h.WaitStatus(ctx, func([]host.InstanceStatus) bool {
			now = h.Reloads()
			return now.Applied != seen.Applied || now.Failed != seen.Failed
		})
		if err != nil {
			return
		}
		seen = now
		switch {
		case now.LastError != nil:
			g.SetProblem(notApplied(file, now.LastError, running))
		default:
			running = true
			g.SetProblem("")
		}
	}
}

// serveStdio serves one client on std.In/std.Out, on the gateway instance
// id provides, until the client closes its end, ctx is done, or the
// instance is disposed (a reload restarted it: the client must reconnect).
// A pending gateway is waited for, unless a reload fails, disables or
// removes it first.
func serveStdio(ctx context.Context, h *host.Host, started <-chan struct{}, settled func([]host.InstanceStatus) bool, id, file, problem string, std Stdio, logger *slog.Logger) int {
	// A pending gateway may come up, or a reload may fail, disable or
	// remove it meanwhile: then there is nothing left to wait for.
	var g *gateway.Gateway
	var last host.InstanceStatus
	err := h.WaitStatus(ctx, func(st []host.InstanceStatus) bool {
		var ok bool
		if g, ok = host.Lookup(h, gateway.Key); ok {
			return true
		}
		last = host.Find(st, id)
		switch last.State {
		case host.StateFailed, host.StateDisabled:
			return true
		case "":
			// Not there yet while the first update is planning; gone
			// after it.
			select {
			case <-started:
				return true
			default:
			}
		}
		return false
	})
	if err != nil || ctx.Err() != nil {
		// Stopped while waiting (a stop that came first may also have
		// shut the composition down, which looks like a removal).
		return exitOK
	}
	if g == nil {
		why := "was removed"
		switch last.State {
		case host.StateFailed:
			why = "failed: " + last.Err
		case host.StateDisabled:
			why = "was disabled"
		}
		return fail(std, "serve", fmt.Errorf("the gateway (entry %q in %s) %s while serve waited for it; the stdio session never started", id, file, why))
	}
	// The servers connecting with the composition have a moment to be
	// listed, so that the client's first lists have them; one that takes
	// longer comes with a list_changed (the client's initialize waits in
	// the pipe meanwhile).
	wait, stopWaiting := context.WithTimeout(ctx, gateway.StartupWait)
	_ = h.WaitStatus(wait, settled)
	stopWaiting()
	// The session ends when the client goes away, when the gateway is
	// closed (which ends its sessions), or at SIGINT: then serve closes the
	// gateway itself, before the host's shutdown would, because go-sdk's
	// session Close waits for the requests in flight, and a tool that runs
	// until cancelled would hold serve forever; closing the gateway cancels
	// them.
	session, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			g.Close()
		case <-g.Done():
		case <-session.Done():
		}
		cancel()
	}()
	g.SetProblem(problem) // before the client's initialize
	problems := make(chan struct{})
	go func() {
		defer close(problems)
		followProblems(session, h, g, file, problem)
	}()
	defer func() {
		cancel()
		<-watched
		<-problems
	}()

	t := &mcp.IOTransport{Reader: readCloser(std.In), Writer: nopWriteCloser{std.Out}}
	logger.Info("serving MCP over stdio", "entry", id)
	err = g.Server().Run(session, t)
	select {
	case <-g.Done():
		if ctx.Err() == nil {
			return fail(std, "serve", fmt.Errorf("a reload stopped the gateway (entry %q in %s, or a service it injects, changed): the stdio session has ended; the client must reconnect", id, file))
		}
	default:
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
		logger.Error("the stdio session ended with an error", "err", err)
		return exitFail
	}
	if ctx.Err() != nil {
		logger.Info("shutting down the gateway")
	} else {
		logger.Info("stdio client gone; shutting down")
	}
	return exitOK
}

// readCloser returns r as an io.ReadCloser, closing it only if it can be.
func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps the transport from closing stdout: the process, not
// the session, owns it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
