package serve

// The command-line help of gateway mode (dsh-host serve -h): what it
// does, and the flags the environment can give.

import "github.com/dsh-host/dsh-host/internal/cli"

// About is serve's help text, before its flags.
const About = `
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
                 ` + DefaultHTTPAddr + `). A non-loopback ADDR requires --token-env
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

// Env are serve's flags that the environment can give. DSH_LOG_LEVEL
// is cmd/dsh-host's serveLogLevel's, read apart (an unknown value keeps the default).
var Env = []cli.EnvFlag{
	{Flag: "http", Env: "DSH_SERVE_ADDR", HTTPOnly: true},
	{Flag: "metrics", Env: "DSH_METRICS_ADDR", HTTPOnly: false},
	{Flag: "log-format", Env: "DSH_LOG_FORMAT", HTTPOnly: false},
	{Flag: "drain-timeout", Env: "DSH_DRAIN_TIMEOUT", HTTPOnly: true},
	{Flag: "list-wait", Env: "DSH_LIST_WAIT", HTTPOnly: false},
	{Flag: "token-env", Env: "DSH_TOKEN_ENV", HTTPOnly: true},
	{Flag: "token-file", Env: "DSH_TOKEN_FILE", HTTPOnly: true},
	{Flag: "tls-cert", Env: "DSH_TLS_CERT", HTTPOnly: true},
	{Flag: "tls-key", Env: "DSH_TLS_KEY", HTTPOnly: true},
	{Flag: "stateless", Env: "DSH_STATELESS", HTTPOnly: true},
	{Flag: "name-limit", Env: "DSH_NAME_LIMIT", HTTPOnly: false},
	{Flag: "drop-marker", Env: "DSH_DROP_MARKER", HTTPOnly: false},
	{Flag: "raw", Env: "DSH_RAW", HTTPOnly: false},
}
