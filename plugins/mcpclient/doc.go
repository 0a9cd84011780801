// Package mcpclient is the mcp-client plugin: each instance connects to one
// MCP server, over stdio, Streamable HTTP or the legacy HTTP+SSE transport,
// and registers the server's
// tools in the tool registry as native tools named
// mcp__<serverName>__<tool>.
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
//	      oauth: {clientId: ..., clientSecret: ..., clientMetadataUrl: ..., scopes: [...],
//	              callbackPort: 0, grant: authorization_code, privateKeyFile: ..., signingAlgorithm: ES256}
//
// A stdio server is started by package stdio (environment scrub, stdout
// filter, stderr logging, bounded teardown, parent-death); the HTTP
// transports share package remote (headers, URL redaction). A server that
// never connected says why, in the error and in its status.
//
// # Legacy HTTP+SSE
//
// transport: sse reaches a server that speaks only the 2024-11-05 HTTP+SSE
// transport (url is its SSE endpoint, often .../sse), through go-sdk's
// SSEClientTransport, with the same headers, URL redaction and supervision
// as Streamable HTTP (a dropped stream is a lost connection); oauth is not
// available with it. A streamable-http URL whose first POST is answered 404
// or 405 fails with a hint to try transport: sse. dsh-host import maps
// "type": "sse" entries (and untyped URLs ending in /sse) to it.
//
// # Names
//
// PublicToolName derives the model-facing name from (serverName, raw name)
// alone, so reloads, reconnects and other servers never rename a tool. Only
// the raw name goes on the wire.
//
// # Discovery and re-sync
//
// Activation waits for the first connection attempt: connect, initialize,
// every page of tools/list, registration; for at most startupTimeoutMs
// unless failOnStartupError (see Lazy start). A server that lists a name twice
// sends an invalid list: the previous tools stay. notifications/tools/list_changed
// re-syncs through the supervisor's one queue; a failed fetch keeps the
// previous tools, and a registration conflict (a foreign tool squatting on
// the namespace) rolls the whole generation back to zero tools with an
// error in the log. The server's instructions (up to 32 KiB) reach the
// prompt as the section "mcp:<serverName>".
//
// Tools no model can use are not registered, and the log says so once per
// tool: MCP Apps' app-only tools (_meta.ui.visibility without "model"),
// and tools whose execution.taskSupport is "required" (the host does not
// support tasks; go-sdk drops the field, so the raw tools/list result is
// read below go-sdk, offered.go): on stdio and SSE by a wrapper of the
// connection; over Streamable HTTP, where a wrapper would hide go-sdk's
// unexported hook that opens the standalone GET stream, in the HTTP
// client, which reads a tools/list POST's answer (a JSON body or an SSE
// stream) as go-sdk reads it, holding at most 8 MiB of it.
//
// # Calls and results
//
// A call sends the raw name and the arguments (anything but a JSON object
// becomes {}); the caller's cancellation and the call's timeouts (see
// Progress) reach the server as notifications/cancelled. The canonical value (CallResult) keeps
// the answer as go-sdk decoded it, every content block and
// structuredContent, and encodes them as JSON only when asked (a gateway
// serves the decoded answer as it is); structuredContent is validated
// against the tool's outputSchema with full JSON Schema. The model sees the text
// joined with "\n", and nothing is a bare placeholder: an embedded text
// resource (or a JSON/XML/text blob) inline after a line naming its URI;
// an embedded binary resource and an audio clip stored in the attachment
// store (SaveBlob) and described by MIME type, WAV duration, size and
// attachment id; a resource link by name and URI, with the mcp_read call
// that reads it while the resources service offers that tool. isError
// becomes a tool error.
//
// Past maxResultBytes the text is cut at a character boundary; the whole
// text is stored as an attachment and the cut ends with how to read on:
// "[output truncated: N of T bytes dropped (maxResultBytes M); the whole
// text (T bytes) is stored: read the rest with mcp_read_output
// {"id":"sha256:...","offset":K}]". mcp_read_output (the built-in
// mcp-output plugin, registered while an mcp-client instance runs and an
// attachment store is mounted) reads
// {id, offset, length?} of a stored text in whole characters and names the
// next offset; its name, description and schema are constants and it does
// not start with the fold's prefix, so folding never hides it.
//
// A caller that passes MCP results through (tools.Caller.PassThrough: the
// gateway) reads the canonical value, the server's blocks as they are: its
// calls get empty model-facing content, and nothing below (cutting,
// storing, downscaling) is done for them.
//
// Images are checked as a batch (PNG, JPEG, GIF or WebP, bytes matching the
// declared type), then admitted only with an attachment store and a caller
// that takes image input; an image over the store's side, pixel or byte
// limits is downscaled to fit (aspect kept, re-encoded:
// attachments.Store.SaveFitted, also for an image embedded as a resource
// and a prompt's images) with a note giving both sizes, and only
// undecodable data is refused. They are
// stored all-or-nothing, and reach the model as
// durable references in their original positions, or every one of them as
// a diagnostic line saying why not. Base64 never enters model content.
//
// # Progress, log messages and elicitation
//
// Every call carries a progress token of its own. The server's
// notifications/progress for it reach tools.ReportProgress on the call's
// context (a late one, after the result, is dropped) and start
// toolCallTimeoutMs again: it is the silence a call may keep, not its
// length. toolCallMaxMs, when set, caps the whole call. Both end the call
// with an error that errors.Is context.DeadlineExceeded and names the key.
//
// notifications/message goes to the instance's logger as "server log" with
// the severity, the logger's name and the data: debug at debug, info and
// notice at info, warning at warn, the rest at error. A server that
// declares logging is asked for the lowest level that logger shows: by
// logging/setLevel after connecting, before 2026-07-28; in each call's
// _meta (io.modelcontextprotocol/logLevel) from 2026-07-28 on.
//
// With the elicit service (services/elicit) present, the client declares
// elicitation, forms and URLs, and hands every request to the service:
// the 2025-11-25 elicitation/create as well as the input requests of a
// 2026-07-28 round trip, which go-sdk's retry middleware brings with the
// call's own context. A 2025-11-25 request carries nothing that names its
// call; it is taken for the call's when exactly one call is in flight.
// Either way the call's context supplies the answerer (elicit.WithAnswerer),
// its silence timer waits while the person answers, and the question ends
// (its context is cancelled) when the call ends. With several calls in
// flight the request is no one call's: the installed answerer is asked,
// every call's silence timer waits, and the question ends once all of them
// have ended. A decline that no
// person chose carries the reason in _meta["dsh-host/reason"] and is
// logged. A call refused with URLElicitationRequired (-32042) has the pages
// it names asked as URL requests, and goes again, once, when every one was
// accepted; otherwise it fails with the server's error and why.
//
// The client declares sampling too, found like elicitation's answerer: a
// sampling/createMessage (or a round trip's input request) goes to the
// sampler on the call's context (services/sampling, which the gateway sets
// to reach its own client's model); without one it fails with
// sampling.ErrNoSampler, since the host has no model to lend servers.
//
// # Resources, prompts and completion
//
// With the resources service (services/resources) present, each instance
// registers itself as a provider for its serverName and, when the server
// advertises resources, lists every page of resources/list and
// resources/templates/list at each connection, again on
// notifications/resources/list_changed, and, for a URI someone subscribed
// to through the service, on notifications/resources/updated (the
// subscribers hear of it first). Each list keeps at most 10,000 entries
// (a cut is logged once). Subscriptions are renewed on every new
// connection, eight at a time under one startupTimeoutMs. Reads,
// subscriptions, unsubscribes and completion/complete go to the live
// connection, bounded by toolCallTimeoutMs.
//
// With the commands service present, the server's prompts (every page of
// prompts/list, again on notifications/prompts/list_changed) become slash
// commands named PublicPromptName: /mcp__<serverName>__<prompt>, with the
// tool naming rules. Arguments are key=value or positional in declared
// order; required ones are checked before the request. The reply renders
// the messages under their roles, images and audio kept in the attachment
// store, embedded resources with their URI. Each command completes its
// arguments through completion/complete (/complete). The same listing goes
// to the resources service (Source.SetPrompts), whose prompts/get returns
// the server's messages as they are: the gateway serves them.
//
// All of it runs on the supervisor like tool re-syncs: a failed list keeps
// the previous one; giving up withdraws resources and prompts with the
// tools; dispose removes them with the scope.
//
// # OAuth
//
// A Streamable HTTP server that answers 401 with a Bearer challenge is
// logged in to by package oauth (the flows, the token store, the loopback
// callback). The browser step never runs inside a connection attempt: the
// handler answers NeedsLoginError, and the supervisor runs the login where
// a front end allowed the browser step on the logins service, and connects
// again, or shows "needs login — run: dsh-host login <serverName>", with
// no tools, and looks for a token in the store every second
// (login_wait.go). A configured Authorization header disables all of it.
// Login and Logout are `dsh-host login` and `logout`; a running instance
// offers its login on the logins service, for /mcp login.
//
// # Lazy start, idle shutdown and the catalog cache
//
// Each discovery writes the server's tools as it listed them, the tools
// that require tasks and its capped instructions to the catalog cache,
// $DSH_HOME/mcp-catalog/<key>.json (catalog.go), atomically and only when
// they changed. The key is a SHA-256 over what launches the server
// (transport, command, args, cwd, inheritEnv, URL, env and header names,
// and a digest of their values), so the file names no launch and holds no
// value. Registering from it runs the same filter, offer checks and swap
// as a live list, so the prompt is byte for byte the same either way, and
// a live list equal to the cached one changes nothing in the registry. A
// file that does not decode is logged and ignored; the next discovery
// rewrites it.
//
// startup: lazy registers the cached tools and instructions and leaves the
// server dormant ("lazy, idle (12 tools cached)"). The supervisor owns
// every start (lazy.go): a call on a dormant server (acquire) asks it for
// one and waits, bounded by startupTimeoutMs, on the pending start, which
// concurrent calls share; a failed start leaves it dormant for the next
// call ("failed to start: ...; the next call tries again"), and so does a
// lost connection (no reconnect in the background). A tool the live list
// no longer has is unregistered by the swap, and a call that already
// reached it is refused, naming it. With no cache, a lazy server connects
// in the background like an eager one whose Apply does not wait.
//
// idleTimeoutMs: the supervisor stops a connection no call held for that
// long (a call in flight or a resource subscription holds it), closes it
// like any generation (the process is gone) and keeps the tools and
// instructions: "stopped after idle (12 tools)"; the next call starts it.
//
// An eager server's Apply waits for the first attempt for at most
// startupTimeoutMs. Past it the instance is active ("starting: no answer
// within startupTimeoutMs (...); still trying in the background") and the
// attempt goes on, bounded by ten times startupTimeoutMs, then the
// reconnect policy; its cached tools were registered before it began, and
// calls wait for it as for a lazy start. failOnStartupError keeps the
// strict start: no cache, the instance fails with the attempt.
//
// # Reconnect
//
// A supervisor reconnects after a lost connection (a stdio server's exit, a
// Streamable HTTP session that expired or a server that stopped answering)
// with delays min(maxDelayMs, initialDelayMs·2^(n-1)), at most maxAttempts
// consecutive failures per outage; the budget resets after maxDelayMs of
// uptime. The old connection (and process) is confirmed closed before a new
// one starts. During an outage the tools stay registered and fail; when the
// budget is spent they are unregistered. The instance's detail in host
// status says where it stands: "connected, 12 tools", "reconnecting 3/10 in
// 4s", "gave up after 10 attempts: ...", "disconnected (reconnect disabled)".
//
// Teardown is bounded: stdin is closed, then SIGTERM after a second, then
// SIGKILL after one more, and what is left of the server's process group is
// killed.
package mcpclient
