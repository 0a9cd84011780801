package cli

// The help of dsh-host's subcommands: each one's synopsis and what it does,
// printed above its flags (FlagSet). serve's and chat's are their packages'.

// Help is a subcommand's synopsis and about text.
type Help struct{ Synopsis, About string }

// Helps holds each subcommand's Help, by name. It is read, never written.
var Helps = map[string]Help{
	"audit": {Synopsis: "[-c FILE | --dir DIR] [--json] [--follow] [--tool GLOB] [--since DURATION] [--verify]", About: `
Audit prints the policy's trail of tool calls: one line per call with its time,
caller, tool, the policy's decision and rule, outcome, duration and result size.
Arguments appear as their SHA-256 unless the policy's audit.arguments is on.
--json prints the trail's own JSON lines; --follow keeps printing calls as they
come, until interrupted. --verify checks the trail's hash chain and its state
file instead, and names the first line, or the file, that does not follow.
The trail is $DSH_HOME/audit, or the audit.dir of the policy entry of the
composition -c names, or --dir.`},
	"import": {Synopsis: "<file|-> [--write [-c FILE | --dir DIR]]", About: `
Import reads an MCP client's server list and prints the equivalent composition
entries (YAML) on stdout. It understands the mcpServers object of Claude
Code's .mcp.json, claude_desktop_config.json, Cursor's mcp.json and Gemini
CLI's settings.json (command, args, env, cwd; or url, httpUrl, headers, type),
the servers object of VS Code's .vscode/mcp.json (and of the "mcp" key of its
settings.json), the mcp object of opencode.json, and the [mcp_servers.NAME]
tables of Codex's config.toml. ${env:VAR}, ${input:NAME} and {env:VAR} become
${VAR} and ${NAME}, and so does Gemini CLI's $VAR as a word of an env value or
header ("Bearer $TOKEN"), a whole argument, or a part of the url. Legacy SSE servers ("type": "sse", or a url ending
in /sse) get transport: sse. Inline secrets (env values and headers whose
names say KEY, TOKEN, SECRET, PASS, AUTH..., values that are URLs with
credentials or connection strings with a password, and the password, user
or secret query parameters of a server's url) are written as ${VAR}
references, and the variables to export are printed on stderr.

With --write the entries are appended to the composition named by -c, keeping
its comments. With --write --dir DIR each server goes to a file of its own,
DIR/<id>.yml, holding a plugins list of one entry: list DIR/*.yml under the
composition's include key. Either way an id or serverName the composition
(or DIR) already uses, or a file that exists, is refused and nothing is
written.`},
	"login": {Synopsis: "<serverName> [-c FILE] [flags]", About: `
Logs in to the remote MCP server the composition names serverName, in the
browser: the authorization URL is opened with $BROWSER (the URL as its last
argument) or the platform's opener, and printed. The token is stored under
$DSH_HOME/oauth; a run or serve that waits for this login connects by itself.`},
	"logout": {Synopsis: "<serverName> [-c FILE] [flags]", About: `
Deletes the stored login of the remote MCP server the composition names
serverName, and revokes its tokens where the authorization server offers
revocation.`},
	"check": {Synopsis: "[-c FILE | FILE] [flags]", About: `
Check validates a composition without starting anything: YAML syntax, ${VAR}
expansion, plugin names, unique ids, each entry's config (strictly decoded and
validated) and service cycles. Every problem is listed with file:line and the
entry id; the exit code is 1 if there is any. Warnings, such as a policy rule
that can match nothing (a server no entry provides, a name in the wrong case)
or every call before other rules, are printed without failing.`},
	"plugins": {Synopsis: "[--json]", About: `
Plugins lists the plugins built into this binary: name, description, the
services each injects and provides, and every config key with its type and
default. Built-in plugins start even when the composition does not list them.`},
	"tools": {Synopsis: "[-c FILE] [--json] [--wait 30s] [flags]", About: `
Tools starts the composition, waits until every instance has settled (active,
failed, or pending with its reason; bounded by --wait), prints every registered
tool (public name, server, raw name on its server, whether the prompt carries
it natively or folded, description) and every instance that is not active with
its error, then shuts down. A server that failed does not change the exit code:
it is listed, not hidden.`},
	"call": {Synopsis: "[-c FILE] <tool> [json-args] [--yes] [--image-input] [--json] [flags]", About: `
Call starts the composition, runs one tool call through the registry's whole
pipeline (hooks, guards, validation, render) and prints the model-facing
content. With --json it prints the content, the canonical value and the error
as one JSON document. Arguments are a JSON object (default {}). Exit 1 when the
tool fails or the call is refused (mcp_call's refusals and its tool's failures
too), 2 on a usage error. Where the policy asks for approval, --yes gives it;
without it the composition's web console is asked (dsh-host ui), and with none
attached the call is denied.`},
	"prompt": {Synopsis: "[-c FILE] [--json] [flags]", About: `
Prompt starts the composition and prints the model-facing tools array exactly
as an OpenAI-compatible chat request carries it (after folding, if the
composition folds), with its size in bytes and estimated tokens (bytes/4).
With --json stdout gets the array's exact bytes and nothing else; the size
line goes to stderr.`},
	"command": {Synopsis: "[-c FILE] '/name [input]' [flags]", About: `
Command starts the composition, runs one slash command registered on the
commands service (for example '/mcp list github') and prints its reply. Exit 1
when the reply is an error.`},
	"policy": {Synopsis: "explain [-c FILE] [--caller KIND] [--subject S] [--group G]... TOOL [ARGS]", About: `
Policy explain prints which of the policy's rules decides a call of TOOL with
the JSON arguments ARGS (default {}), and why: each rule considered, in order,
matched or not and on which condition, then the decision. --caller is the
caller kind (console, chat, call, gateway, ui; default call); --subject and --group
stand for the identity a gateway's token gives. It asks the running host of
the composition, like call does; without one, it starts the composition, so
that the tools' servers and annotations are known. Nothing is called.`},
	"resources": {Synopsis: "[-c FILE] [--server S] [--json] [query...] [flags]", About: `
Resources lists the resources and resource templates of the composition's MCP
servers (URI, server, MIME type, name, description), then every instance that
is not active. It asks the running host of the composition, if any (see
--no-attach), else starts the composition and waits until every instance has
settled. Words after the flags keep the entries whose URI, name, title,
description or MIME type contain all of them. Read one with: dsh-host read URI.`},
	"read": {Synopsis: "[-c FILE] <uri> | <template> key=value... [--server S] [--json] [flags]", About: `
Read reads one resource from the MCP server that lists it (or whose template
matches it; --server names the server for a URI nobody lists), or expands a
resource template with key=value arguments and reads the result. It asks the
running host of the composition, if any (see --no-attach), else starts the
composition. Text is printed as it is; an image or other binary content is
kept in the attachment store and printed as its reference, MIME type and size.
With --json it prints {server, uri, contents} as the server sent them (binary
as base64). Exit 1 when the read fails.`},
	"run": {Synopsis: "[-c FILE] [--console auto|on|off] [flags]", About: `
Run starts every instance of the composition and keeps them running. It
watches the file: an edit disposes and recreates exactly the entries that
changed, and a file that does not parse or validate changes nothing (the
error is logged with file and line). SIGHUP reloads too. SIGINT or SIGTERM
disposes every instance and exits 0. While the instances start, stdout shows
progress (connecting 2/5: github…), then a summary (ready: 7 active).

On a terminal, run also opens a console on stdin: /help lists its commands
(/status, /tools, /prompt, /call, /reload, /quit and every registered slash
command such as /mcp).

Once ready, run answers on a control socket under $DSH_HOME/run, private to
its user: dsh-host status, tools, call, prompt, command, resources, read and
reload with the same -c FILE ask this host rather than start their own (--no-attach starts
their own). A second run or serve of the same file runs without the socket,
and takes it over when the first stops.`},
	"sandbox": {Synopsis: "check [-c FILE] [SERVER]", About: `
Sandbox check prints, for each stdio server of the composition (or the one
named by serverName or id), the sandbox it would start in: the effective
rules (what is granted by default and by its sandbox key), what is not
enforced, and the outcome of probes run inside that same sandbox, without
starting the server: reading a file outside the grants, creating one, and
connecting to a TCP port not granted. A probe that gets through where the
rules say it should not fails the check (exit 1).`},
	"status": {Synopsis: "[-c FILE] [--json] [--no-attach] [flags]", About: `
Status prints every instance of the composition: its state (active,
starting, pending, failed, disabled), since when, how many tools it
registered, and its detail or error: what an MCP server said of itself
(connected, lazy and idle, needs login) or why it failed. It asks the
running host of the composition (dsh-host run or serve) when there is one;
otherwise it starts the composition, waits until every instance has settled
(bounded by --wait), prints, and shuts down.`},
	"reload": {Synopsis: "[-c FILE] [flags]", About: `
Reload has the running host of the composition (dsh-host run or serve)
re-read its file now, as SIGHUP does: changed entries are restarted and
failed instances are started again. It waits for the outcome (at most
--timeout) and prints, for each entry the reload touched, whether it
started, restarted, kept its previous config (the new one failed: the old
server keeps serving) or failed, then the instances; it exits 1 when an
entry was kept or failed. A file that does not parse or validate changes
nothing and exits 1 with its problems. With no running host there is nothing to reload: it exits
1 (dsh-host check validates a file without starting anything).`},
	"add": {Synopsis: "[-c FILE] [--trust] NAME -- COMMAND [ARGS...] | --transport http|sse NAME URL | REGISTRY-NAME[@VERSION]", About: `
Add writes an MCP server's entry into the composition, keeping every other
byte of the file, after checking the result as 'dsh-host check' does; the
running host of the composition starts it (it follows the file).
NAME -- COMMAND ARGS runs a stdio server; --transport http (or sse) NAME URL
reaches a remote one, with --header K=V. --env K=V sets a stdio server's
environment. A secret given inline (a token in --env or --header) is written
as ${VAR}, and the export line that sets it is printed.
REGISTRY-NAME[@VERSION] (io.github.owner/server) is looked up in the MCP
Registry (the registry key of settings.yaml, or DSH_SETTINGS__REGISTRY;
default https://registry.modelcontextprotocol.io): add picks its npm package
(npx -y pkg@version), else its PyPI one (uvx pkg==version), else its remote
(--use npm|pypi|remote chooses), asks on stdin for the required arguments and
variables without a default, writes secrets as ${VAR} references with the
export lines to set them, and grants the sandbox what the document implies.
--name sets the entry's name (default: the registry name's last part).
The server's tools are held until you review them with 'dsh-host trust
NAME'; --trust skips that and trusts its first list as it comes.`},
	"search": {Synopsis: "[--limit N] QUERY", About: `
Search lists the servers of the MCP Registry whose names hold QUERY: name and
latest version, how each runs (npm, pypi, oci packages; remotes), and the
description. Add one with 'dsh-host add NAME'.`},
	"remove": {Synopsis: "[-c FILE] NAME", About: `
Remove takes the MCP server NAME (its entry id or serverName) out of the
composition, or out of the included file that holds it, keeping every other
byte; the running host stops it. Its pins stay in pins.dir: added again, the
server is held until reviewed anew.`},
	"trust": {Synopsis: "[-c FILE] [--yes | --digest D] SERVER [TOOL]", About: `
Trust shows how the current definitions of an MCP server's tools (only TOOL's,
its name on the server or its mcp__ name, when given) differ from the trusted
ones, invisible characters flagged, and asks before approving them: a tool the
policy holds because the server changed or added it after its tools were first
trusted is then offered and callable again. What is approved is what was
shown: a definition that changes after the diff is printed is not approved.
--yes approves what is shown without asking; --digest D approves, without
showing anything, the definitions D names (the digest a review printed).
It asks the running host of the composition, like call does; without one, it
starts the composition, so that the server lists its tools, and records them
for the next start. '/policy' shows what is held and why; the pins are kept
in the policy's pins.dir ($DSH_HOME/pins).`},
}
