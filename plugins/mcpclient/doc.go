// Package mcpclient is the mcp-client plugin: each instance connects to one
// MCP server, over stdio, Streamable HTTP or the legacy HTTP+SSE transport,
// and registers the server's tools in the tool registry as native tools
// named mcp__<serverName>__<tool> (PublicToolName: from the serverName and
// the raw name alone, so reloads, reconnects and other servers never rename
// a tool; only the raw name goes on the wire).
//
// # Configuration
//
//	plugins:
//	  - id: github
//	    name: mcp-client
//	    config:
//	      serverName: github          # ^[A-Za-z0-9_-]{1,32}$, unique per host
//	      transport: stdio            # or streamable-http, sse (url, headers)
//	      command: npx
//	      args: [-y, "@modelcontextprotocol/server-github"]
//	      env: {GITHUB_TOKEN: "${GITHUB_TOKEN}"}
//	      toolCallTimeoutMs: 60000    # the silence allowed; progress starts it again
//	      toolCallMaxMs: 0            # a cap on the whole call (0: none)
//	      startupTimeoutMs: 30000     # connect + initialize + full discovery
//	      failOnStartupError: false
//	      startup: eager              # or lazy: tools from the catalog cache, start on the first call
//	      idleTimeoutMs: 0            # stop the server after this long unused (0: never)
//	      reconnect: {enabled: true, initialDelayMs: 500, maxDelayMs: 30000, maxAttempts: 10}
//	      tools: {include: ["search_*"], exclude: ["*_admin"]}   # globs over raw names
//	      maxResultBytes: 1048576
//	      inheritEnv: scrub           # or minimal, all (stdio)
//	      oauth: {clientId: ..., scopes: [...], grant: authorization_code}   # see package oauth
//
// # Parts
//
// This package is the plugin and the supervisor; each other job is a part
// of its own, with its own lock and tests:
//
//   - stdio starts a stdio server (environment scrub, stdout filter, stderr
//     logging, bounded teardown, parent-death); remote holds what the HTTP
//     transports share (headers, URL redaction, the legacy SSE transport).
//   - oauth logs in to a remote server that asks (login_wait.go is the
//     supervisor's side: a server waiting for a login has no tools).
//   - toolset owns the registered tools: the filter, the tools no model can
//     use, the generation swap and the catalog cache.
//   - calls owns the calls in flight: progress tokens, timeouts, the
//     server's log messages relayed to callers.
//   - result maps a call's answer for each kind of caller.
//   - bridge feeds the resources and commands services (resources,
//     templates, subscriptions, prompts, completion) and answers the
//     server's questions (elicitation, sampling).
//   - mcpservers converts other MCP clients' configs, for dsh-host import.
//   - wire is the one tap beneath go-sdk, for what it does not expose: the
//     parts above subscribe to it (progress and log counts, tools that
//     require tasks, prompt arguments; docs/upstream.md).
//
// # The supervisor
//
// One goroutine per instance (client.run) owns the connection, the
// reconnect state and every sync, serialized through its select loop:
// connection attempts, a lost connection, tools/list_changed, a probe after
// a call failed below the protocol, the bridge's re-syncs, lazy starts and
// idle stops. Calls read the live connection under a lock (client.current,
// acquire) and never wait for the loop, except for a lazy start.
//
// Activation waits for the first attempt: connect, initialize, every page
// of tools/list, registration, for at most startupTimeoutMs (lazy.go says
// what happens past it, and with startup: lazy). A failed re-sync keeps the
// previous tools; a registration conflict (a foreign tool squatting on the
// namespace) rolls the whole generation back to none, with an error in the
// log. The server's instructions (up to 32 KiB) reach the prompt as the
// section "mcp:<serverName>".
//
// # Reconnect
//
// After a lost connection (a stdio server's exit, a Streamable HTTP session
// that expired or a server that stopped answering) the supervisor
// reconnects with delays min(maxDelayMs, initialDelayMs·2^(n-1)), at most
// maxAttempts consecutive failures per outage; the budget resets after
// maxDelayMs of uptime. The old connection (and process) is confirmed
// closed before a new one starts. During an outage the tools stay
// registered and fail; when the budget is spent they are unregistered. The
// instance's detail in host status says where it stands: "connected, 12
// tools", "reconnecting 3/10 in 4s", "gave up after 10 attempts: ...",
// "disconnected (reconnect disabled): <why>".
//
// # Results
//
// A call sends the raw name and the arguments (anything but a JSON object
// becomes {}); the caller's cancellation and the call's timeouts reach the
// server as notifications/cancelled. structuredContent is validated against
// the tool's outputSchema; isError becomes a tool error. A gateway
// (tools.Caller.PassThrough) gets the server's blocks as they are
// (result.CallResult); a model gets text, stored images and cut long text
// (result.Projector), which mcp-output's read tool reads on.
package mcpclient
