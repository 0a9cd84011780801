// Package result is mcp-client's result projection: what a tool call's
// answer becomes for each kind of caller.
//
// A programmatic caller (a gateway, `dsh-host call --json`) gets CallResult:
// every block and structuredContent as the server sent them, decoded by
// go-sdk and encoded to JSON only when asked (tools.MCPResult).
//
// A model gets Projector.Model: text inline, embedded text resources after
// a line naming them, resource links with how to read them, images checked
// and stored all-or-nothing (downscaled to fit the store's limits) as
// durable references, audio and embedded binaries stored as attachments,
// each with a diagnostic in its place when it cannot be kept; then the
// text cut at maxResultBytes in whole characters, with the whole stored for
// mcp-output's read tool. Projector.Render is the same without storing
// anything, for a value a hook replaced. OutputSchema validates
// structuredContent against a tool's outputSchema.
package result
