package tools

// This file holds the types other packages build against.

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
)

// Key is the tool registry service.
var Key = host.NewKey[*Registry]("tools")

// Caller says who is calling a tool and what it accepts.
type Caller struct {
	// Kind is CallerConsole, CallerChat, CallerCall, CallerGateway, or
	// another kind of a caller of its own ("test").
	Kind string
	// ID distinguishes callers of one kind (a session, a client).
	ID string
	// ImageInput is true when the caller can take images in model-facing
	// content; without it, tools must not put images there.
	ImageInput bool
	// PassThrough is true for a caller that hands an MCP server's result
	// on as the server sent it (a gateway, which reads Result.Value): a
	// tool whose value carries that result may then leave the
	// model-facing content empty, storing no image or blob and cutting no
	// text for a model that will not read it.
	PassThrough bool
	// Mask, when non-nil, limits which tools the caller sees and may call.
	Mask *Mask
	// Identity, when non-nil, is who stands behind the caller.
	Identity *Identity
	// Auth is how a gateway's caller authenticated (AuthStaticToken,
	// AuthOAuth), "" when it presented nothing (stdio, a listener
	// without a token), for the audit trail.
	Auth string
}

// Caller.Auth's values.
const (
	// AuthStaticToken is the gateway entry's own bearer token: one
	// person's, with no identity behind it.
	AuthStaticToken = "static-token"
	// AuthOAuth is an issuer's access token: Identity says whose.
	AuthOAuth = "oauth"
)

// Mask is a set of allow and deny name patterns (`*` matches any run of
// characters). A name is visible when it matches some Allow pattern (or
// Allow is empty) and no Deny pattern.
type Mask struct {
	Allow []string
	Deny  []string
	// Within, when non-nil, is an outer mask the name must also pass: a
	// restriction of an already restricted caller (see Caller.Restrict).
	Within *Mask
}

// Call is one execution of a tool.
type Call struct {
	Caller Caller
	// Name is the tool's registered (public) name.
	Name string
	// Args is the JSON arguments object as the caller sent it (pre-execute
	// hooks may have rewritten it).
	Args json.RawMessage
	// Channels are the call's back-channels to its caller (progress, log,
	// answerer, roots, sampler, one-shot): set by whoever starts the call
	// (Registry.Run), read by whoever serves it. Nil: none.
	Channels *Channels
	// decoded is Args decoded by the registry (Arguments).
	decoded *decodedArgs
}

// Output is what a tool's Execute returns.
type Output struct {
	// Value is the canonical, JSON-marshalable result for programmatic
	// callers.
	Value any
	// Content, when non-nil, is the model-facing content the tool projected
	// itself (for example with durable image references). When nil, the
	// registry renders Value with the definition's Render. A post-execute
	// hook that replaces Value discards this projection.
	Content []Content
	// Failed marks Value as the tool's answer to a request it could not
	// serve (a refusal of its own, a failed child call) rather than a
	// result: the model reads Content as usual, and callers that report
	// an outcome (a gateway's isError, dsh-host call's exit code) report
	// a failure with that text.
	Failed bool
}

// Content is one block of model-facing content.
type Content struct {
	Type  string           `json:"type"` // "text" or "image"
	Text  string           `json:"text,omitempty"`
	Image *attachments.Ref `json:"image,omitempty"`
}

// Text returns a text block.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// Origin says where a tool comes from, for listings and policy.
type Origin struct {
	Instance string // composition id of the registering instance; Register sets it from the scope
	Server   string // MCP serverName, for MCP tools
	RawName  string // the tool's name on its server, for MCP tools
	// Pin is the server's pin mode (mcp-client's pin: hold, warn or off;
	// "" for the policy's default), for MCP tools.
	Pin string
	// Listing tells one tools/list of a server from another: the tools
	// registered from one list share it, and no other list of any server
	// instance has it (0 for tools of no MCP server). The policy trusts a
	// new server's first list as a whole by it.
	Listing uint64
}

// The pin modes of an MCP server (Origin.Pin), which the policy reads: a
// tool that appears or changes after the server's first list was trusted
// is held (not offered, its calls refused until someone trusts it),
// offered with a warning, or not checked at all.
const (
	PinHold = "hold"
	PinWarn = "warn"
	PinOff  = "off"
)

// Definition is a tool.
type Definition struct {
	Name        string
	Description string
	// InputSchema is the raw JSON Schema of the arguments; it passes through
	// to the model unchanged.
	InputSchema json.RawMessage
	// OutputSchema optionally constrains Output.Value.
	OutputSchema json.RawMessage
	Execute      func(ctx context.Context, call Call) (Output, error)
	// ChecksArguments says the tool answers arguments that are not an
	// object or do not match InputSchema itself, with a hint of its own
	// (a meta-tool lenient with a model's sloppy call). Without it the
	// registry refuses them with an *ArgumentsError before any guard. The
	// guards read the same decoded view either way (Call.Arguments).
	ChecksArguments bool
	// Render turns a canonical value into model-facing content. It must be
	// pure and synchronous. Nil renders a string value as its plain text
	// and any other value as JSON text.
	Render func(value any) []Content
	Origin Origin
	// MCPTool is the tool as its MCP server listed it (a JSON object with
	// title, annotations, outputSchema, icons, _meta...), for MCP tools;
	// nil for others. A gateway serves it to its clients unchanged but for
	// the name, description and input schema, which are the registry's.
	MCPTool json.RawMessage
	// Annotations are the hints of a tool no MCP server lists (a
	// built-in or meta-tool: ReadOnly for one that only reads), which a
	// gateway serves to its clients; an MCP tool's are in MCPTool.
	Annotations *mcp.ToolAnnotations
	// Dispatches says the tool only calls other tools through the
	// pipeline (Run: mcp_call), each of which meets the guards itself;
	// the policy's chat rule does not ask for the dispatcher.
	Dispatches bool
	// Preview, when set, says what a call would do, for a person asked
	// to approve it (an edit's diff); "" when it cannot say. It must not
	// change anything.
	Preview func(call Call) string
}

// ReadOnly returns the annotations of a tool that only reads: clients
// that ask before a call which may change something (Codex under its
// default approval policy) call it without asking.
func ReadOnly() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{ReadOnlyHint: true} }

// Schema is one tool as the model sees it.
type Schema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Section is a named piece of system prompt text (for example an MCP
// server's instructions).
type Section struct {
	Name string
	Text string
}

// Assembly is what the model sees for one request.
type Assembly struct {
	Caller   Caller
	Sections []Section
	Tools    []Schema
}

// Result is the outcome of Execute.
type Result struct {
	// Value is the canonical value (nil on error).
	Value any
	// Content is the model-facing content. On error it is one text block
	// "Error: <message>".
	Content []Content
	// Failed is the tool's Output.Failed: Value and Content are its own
	// explanation of a failure (Err is nil).
	Failed bool
	// Err is nil on success. errors.Is(Err, ErrRefused) tells a policy
	// refusal (pre-execute, guard, post-execute block, mask) from a tool
	// error; ErrUnknownTool and context.Canceled are also distinguishable.
	Err error
}

// MCPResult is a tool's value (Output.Value, Result.Value) that relays an
// MCP server's result as the server sent it: the contract between a tool
// that calls an MCP server (mcp-client's CallResult) and a caller that
// passes the result on (Caller.PassThrough: a gateway serves it to its
// client instead of the model-facing content, which stores binary blocks
// as attachments and cuts long text for a model's context).
//
// It gives the result in both forms a relay can use: as go-sdk decoded
// it, to serve without decoding again, and as JSON, which a value made
// of JSON (say, a post-execute hook's) has alone.
type MCPResult interface {
	// MCPCallToolResult returns a new result holding the content blocks
	// and structuredContent as go-sdk decoded them, which the caller may
	// set IsError on; nil when the value has only JSON.
	MCPCallToolResult() *mcp.CallToolResult
	// MCPContent returns the content blocks, each as JSON. The slice may
	// be shared: do not modify it.
	MCPContent() []json.RawMessage
	// MCPStructuredContent returns structuredContent as JSON, nil when
	// there is none.
	MCPStructuredContent() json.RawMessage
}

// PreExecuteHook runs before guards; it may rewrite call.Args, or refuse by
// returning an error (reported as a refusal).
type PreExecuteHook func(ctx context.Context, call *Call) error

// GuardHook allows a call (nil) or denies it with a reason (the error).
type GuardHook func(ctx context.Context, call Call) error

// PostExecuteHook sees a successful result. It may replace res.Value (the
// content is then rendered again from the new value, discarding the tool's
// own projection, unless the hook also assigns res.Content), replace
// res.Content (setting it to nil renders the value again), or block the
// result by returning an error (a refusal). A hook replaces a value by
// assigning a new one; changing a map or slice in place is not seen as a
// replacement.
type PostExecuteHook func(ctx context.Context, call Call, res *Result) error

// ChangeKind says whether a tool came or went.
type ChangeKind int

const (
	Registered ChangeKind = iota + 1
	Unregistered
)

func (k ChangeKind) String() string {
	switch k {
	case Registered:
		return "registered"
	case Unregistered:
		return "unregistered"
	}
	return "ChangeKind(" + strconv.Itoa(int(k)) + ")"
}

// Change is a registration or unregistration.
type Change struct {
	Kind   ChangeKind
	Name   string
	Origin Origin
}
