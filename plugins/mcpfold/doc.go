// Package mcpfold is the mcp-fold plugin: it keeps the model's prompt the
// same size however many MCP servers and tools are connected, by folding
// every MCP tool schema out of the assembled prompt behind two constant
// meta-tools, mcp_list and mcp_call.
//
// # Composition
//
//	plugins:
//	  - id: fold
//	    name: mcp-fold
//	    config:
//	      prefix: mcp__                  # tools named so are MCP tools (default)
//	      keep: [mcp__github__search_*]  # stay native; `*` is the only wildcard
//	      servers: [github, fs]          # whitelist; empty means every server
//	      descriptionLimit: 200          # characters per catalog description
//
// The plugin requires the tools service and uses the settings, commands
// and logins services when they are present. Without settings, nothing can
// be disabled and the toggles say so; without commands there is no /mcp;
// without logins there is no /mcp login.
//
// # Folding
//
// The fold runs in the tool registry's assembly waterfall, after every
// handler registered later than it. For each assembled tool, in order:
// mcp_list and mcp_call are never folded; a tool without the prefix, or
// without a server, stays; a tool of a disabled server is folded whatever
// keep and servers say; otherwise the tool is folded unless a keep pattern
// matches it or its server is not whitelisted. A tool's server is the one
// it was registered with (tools.Origin.Server, which mcp-client sets),
// never parsed from its name: serverNames may contain "__".
//
// Tools stay registered: listings, direct calls and policy hooks see them
// as before; only the prompt changes. The fold is fail-open: unless the
// registered mcp_list and mcp_call are this instance's own (their
// Origin.Instance is its id) and visible to the caller, the assembly passes
// through untouched, so a model never loses sight of a tool it cannot
// reach. If either meta-tool fails to register both are rolled back, a
// warning is logged and no fold is installed. An assembly with nothing to
// fold is returned as it came, same slice.
//
// The meta-tools' names, descriptions and schemas are constants, so the
// folded prompt is byte-identical across re-syncs that keep the set of
// servers: a prompt cache keeps hitting.
//
// # mcp_list
//
// {tool?, server?, query?, verbose?}. Without arguments: a catalog grouped
// by server in first-seen order, descriptions whitespace-collapsed and cut
// to descriptionLimit characters with "…". tool expands one tool's full
// description and input schema; server filters; verbose adds every schema;
// query ranks the catalog with BM25 (search.go) and returns the 10 best.
// Refusals of either meta-tool are values rendered as plain text, never Go
// errors, and marked failed (tools.Output.Failed), so that a gateway's
// client sees isError and dsh-host call exits 1 on them.
//
// # mcp_call
//
// {tool, arguments?}. After its checks (see call) and a validation of the
// arguments against the tool's input schema, the call is Registry.Execute
// with the caller's context and Caller, so cancellation, masks, the
// child's own hooks and image projection behave exactly as for a direct
// call; the child's value and content come back verbatim. A child failure
// comes back, failed, as `MCP tool "<t>" failed: <msg>`; a cancelled call
// stays a cancellation.
//
// # Server ids and gates
//
// Every server seen by /mcp gets a stable id, 1..99, the smallest free
// first; mapped and disabled ids are in use, and ids are never recycled.
// They live in the settings section "mcp-adapter" as
// {serverIds: {name: id}, disabled: [id]}, written only when an id is added
// or a gate changes; a section of another shape is normalized, never
// fatal (see normalize), and hand edits of the file apply at once.
//
// A disabled server is folded out of every prompt, hidden from mcp_list,
// refused by mcp_call, and refused by a guard in the registry's execute
// pipeline for direct calls too.
//
// # The /mcp command
//
//	/mcp                  servers with ids, tools, and the folding-health footer
//	/mcp list <name>      a server's tools, or a tool's description and schema
//	/mcp config           the effective config and the id inventory
//	/mcp disable <id>     gate a server off
//	/mcp enable <id>      gate it back on, same id
//	/mcp login <id|name>  OAuth login of a remote server in the browser
//
// /mcp login runs the login an mcp-client instance offers on the logins
// service (see login); /mcp lists the servers waiting for one. Output is
// capped at 400 lines.
package mcpfold
