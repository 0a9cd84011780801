// Package toolset keeps one mcp-client instance's tools in the tool
// registry.
//
// A Set registers a server's list as one generation (Swap): the
// include/exclude filter runs over raw names, and tools no model can use
// are left out, logged once per tool: MCP Apps' app-only tools
// (_meta.ui.visibility without "model") and tools whose
// execution.taskSupport is "required" (the host does not support tasks).
// go-sdk drops that field, so Tasks reads the raw tools/list result below
// it, a subscriber of the wire (package wire). An unchanged list leaves
// the registry alone; a registration conflict rolls the whole generation
// back.
//
// Each live list is written to the catalog cache (SwapLive), with the tools
// that require tasks and the server's capped instructions, atomically and
// only when it changed: $DSH_HOME/mcp-catalog/<key>.json, where the key is
// a digest of what launches the server, so the file names no launch and
// holds no value. Registering from it (FromCatalog) runs the same filter,
// offer checks and swap as a live list, so the prompt is byte for byte
// the same either way. A file that does not decode is logged and ignored;
// the next discovery rewrites it.
package toolset
