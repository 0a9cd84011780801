// Package tools is the tool registry: definitions under the model
// function-name contract, the execute pipeline, and prompt assembly.
//
// Plugins reach the registry as the `tools` service (Key); the built-in
// plugin of the same name provides it.
//
// # Definitions and names
//
// Register adds a Definition on behalf of a plugin instance, given as its
// *host.Scope: the tool goes away when the scope is disposed, with no
// teardown to write, and its Origin.Instance is the scope's id. Register
// also returns an unregister function, for a tool that goes earlier (an MCP
// server's tool list changed). Every other registration (hooks, assemble
// handlers, change handlers) takes the scope too; a nil scope panics.
//
// Names obey the function-name contract of OpenAI-compatible model APIs,
// ^[A-Za-z0-9_-]{1,64}$ (NamePattern, CheckName). A name that is taken is an
// error naming the instance that holds it: nothing is ever overwritten.
// Unregister removes exactly the registration it came from, so an old
// registration's unregister cannot remove a newer one under the same name,
// and calling it again does nothing. InputSchema is raw JSON Schema that
// passes to the model byte for byte; OutputSchema, when set, is resolved
// once at registration and checks every Output.Value.
//
// # The execute pipeline
//
// Execute(ctx, caller, name, args) runs, in order:
//
//  1. Lookup and mask: a name that is not registered, or that the caller's
//     Mask hides, is an unknown tool. Empty args become `{}`.
//  2. Cancellation: a ctx that is already done ends the call here; the tool
//     is never dispatched.
//  3. Pre-execute hooks (OnPreExecute), in registration order: each may
//     rewrite call.Args or refuse.
//  4. Arguments: decoded once, without loss (Call.Arguments, the one view
//     the guards and the tool share), and checked against InputSchema; a
//     problem is an *ArgumentsError (ErrInvalidArguments) naming the
//     place, and nothing after runs (unless the Definition says it
//     ChecksArguments itself).
//  5. Guards (OnGuard): the first that returns an error denies the call with
//     that reason. This is where a permission system plugs in.
//  6. The tool's Execute, with the caller's ctx (its cancellation reaches
//     the tool). No registry lock is held while it runs.
//  7. Output validation against OutputSchema; a failure names the JSON path
//     (value.items[2].id).
//  8. Content: the tool's own Output.Content when it projected one, else
//     Render(Value); without Render, a string value as its plain text and
//     any other value as JSON text.
//  9. Post-execute hooks (OnPostExecute): each may replace the value (the
//     content is then rendered again from the new value, discarding the
//     tool's own projection, unless the hook also set content), replace the
//     content, or block the result.
//  10. Finish hooks (OnFinish) see every call's end, whatever its outcome
//     (a refusal, an unknown tool, an error), with its duration and the
//     notes earlier hooks attached to the call (SetNote): the policy's
//     audit trail is one.
//
// Hooks match tool names with anchored `*` patterns (Match): "mcp__*" is
// every MCP tool, "mcp__github__*" one server's, "*" everything. The match
// of each tool against the hook set is computed once per change of hooks,
// so the per-call cost does not grow with the number of hooks that do not
// apply.
//
// # Errors
//
// A failed call has Result.Err set, a nil Value, and Content of one text
// block "Error: <message>". The error says which kind of failure it was:
// errors.Is ErrRefused (a *RefusalError with its Stage and Reason) for a
// policy refusal, ErrUnknownTool, context.Canceled or DeadlineExceeded,
// ErrInvalidOutput, or a *ToolError wrapping the tool's own error. A panic
// in a tool, hook or render becomes an error and is logged with its stack.
//
// # Assembly
//
// Assemble(ctx, caller) builds what the model sees for one request: one
// Schema per visible tool, sorted by name, passed through the assemble
// waterfall (OnAssemble; the earlier-registered handler is the outer one),
// which is how folding replaces MCP schemas with meta-tools.
// Assembly.ToolsJSON gives the OpenAI-compatible `tools` array with every
// parameters schema embedded verbatim, and Size its length in bytes.
//
// # Offered and callable
//
// OnHide keeps a tool out of what a caller is offered (List, Names,
// Assemble) while it stays registered and callable by name, so that its
// guard can say why a call is refused: the policy withholds a tool whose
// definition changed after it was trusted, and one its rules deny to the
// caller. ListAll lists every tool, for code that manages them. A call
// made from within another (mcp_call's child) reads its parent call's
// notes with ParentNote.
//
// # Masks
//
// Caller.Mask limits what a caller sees and calls: List, Names, Lookup,
// Assemble and Execute all apply it, and a hidden tool is simply unknown to
// that caller. Caller.Restrict narrows an already restricted caller (a
// sub-agent of a session) without ever widening it.
//
// # Dispatching from another tool
//
// A tool that calls other tools by name (a meta-tool such as mcp_call)
// has two ways, with different policy:
//
//   - r.Run(ctx, Call{Caller: call.Caller, Name: name, Args: args,
//     Channels: call.Channels}) runs the child through the
//     whole pipeline: its own hooks and guards fire, its output is
//     validated, and its Result (Value, Content, Err) can be returned as the
//     meta-tool's Output, keeping the child's projection.
//   - r.Lookup(call.Caller, name) and then def.Execute (and def.Render when
//     the Output has no Content) runs only the child's body, as the original
//     adapter does: only the meta-tool's hooks fire, so policy must guard
//     the meta-tool itself.
//
// Either way, pass the call's ctx, Caller and Channels on, so
// cancellation, the caller's mask and image capability, and its
// back-channels (progress, questions, one-shot) reach the child.
//
// # Progress
//
// A caller that shows progress sets Channels.Progress on the call it
// starts (Run); a tool reports with call.Channels.ReportProgress
// (mcp-client turns the server's notifications/progress into reports).
// Without a listener, reporting does nothing. The other back-channels of
// Channels (log, answerer, roots, sampler, one-shot) go the same way.
//
// # Changes
//
// OnChange follows registrations and unregistrations, delivered one at a
// time in the order they happened. OnAssemblyChange says that what
// Assemble returns may have changed: a tool came or went, an assemble
// handler was added or removed, or a plugin whose handler depends on its
// own state called AssemblyChanged. A consumer of the assembly (the
// gateway) follows it instead of guessing.
package tools
