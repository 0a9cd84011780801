package app

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// App is everything a front end asks of a host. Local answers from a host
// in this process; internal/control's Client asks a running host over its
// control socket. Both pass one test suite (app_test.go).
//
// An error returned is the transport's or a service the composition does
// not run; what a call, a command or a turn did wrong is in its answer.
type App interface {
	// Status is every instance and how many tools each registered.
	Status(ctx context.Context) (Status, error)
	// Watch follows the instances' state changes until ctx ends, when the
	// channel is closed. A follower that does not keep up loses changes,
	// counted in the next event's Dropped: it never slows the host.
	Watch(ctx context.Context) (<-chan StatusEvent, error)
	// Reload has the host re-read its composition (as SIGHUP does) and
	// returns its outcome, or ctx's error.
	Reload(ctx context.Context) (ReloadResult, error)

	// Tools is every tool req's caller sees, with its origin and whether
	// the policy withholds it.
	Tools(ctx context.Context, req ToolsRequest) (ToolList, error)
	// Call runs one tool call through the registry's pipeline; its
	// progress and a server's questions go to req's handlers.
	Call(ctx context.Context, req CallRequest) (tools.Result, error)
	// Prompt is the tools array a model of req's caller is sent.
	Prompt(ctx context.Context, req ToolsRequest) (Prompt, error)
	// Command runs one slash command; Commands lists them.
	Command(ctx context.Context, req CommandRequest) (commands.Reply, error)
	Commands(ctx context.Context) ([]CommandInfo, error)
	// Resources lists the servers' resources and templates; Read reads
	// one. A read's failure is the error.
	Resources(ctx context.Context, req ResourcesRequest) (ResourceList, error)
	Read(ctx context.Context, req ReadRequest) (ReadAnswer, error)

	// Login logs in to a remote MCP server of the composition in the
	// browser; Logout deletes its stored login. Both run where the caller
	// is (login.go).
	Login(ctx context.Context, req LoginRequest) (string, error)
	Logout(ctx context.Context, req LoginRequest) (string, error)

	// Review shows what trusting a server's tools would approve; Trust
	// approves exactly the definitions a review's digest names.
	Review(ctx context.Context, req TrustRequest) (Review, error)
	Trust(ctx context.Context, req TrustRequest) (commands.Reply, error)
	// Explain says how the policy's rules decide one call.
	Explain(ctx context.Context, req ExplainRequest) (commands.Reply, error)
	// Audit yields the policy's trail of calls that q selects, and with
	// q.Follow those written later, until ctx ends or the loop stops.
	Audit(ctx context.Context, q AuditQuery) (iter.Seq2[AuditRecord, error], error)

	// Chat runs one turn of the front end's conversation (the handle
	// ChatSession gave it), its events going to req.Events as they come.
	// A handle the host no longer keeps is ErrNoConversation.
	Chat(ctx context.Context, req ChatRequest) (ChatResult, error)
	// ChatCompact replaces the conversation's older turns by a summary.
	ChatCompact(ctx context.Context, req ChatCompactRequest) (ChatCompactResult, error)
	// ChatSession starts a new conversation or resumes a recorded one:
	// a conversation of the front end's own, whose handle ChatInfo
	// carries, unless req names the one it has.
	ChatSession(ctx context.Context, req ChatSessionRequest) (ChatInfo, error)
	// ChatSessions lists the recorded sessions, marking the one req's
	// conversation saves in.
	ChatSessions(ctx context.Context, req ChatSessionsRequest) (SessionList, error)

	// ToolDetail is one tool of Tools with its schemas (ui.go);
	// Composition the file and the host's loads of it.
	ToolDetail(ctx context.Context, req ToolRequest) (ToolDetail, error)
	Composition(ctx context.Context) (CompositionInfo, error)
	// SetDisabled disables or enables one entry by editing the
	// composition file, then reloads (entries.go).
	SetDisabled(ctx context.Context, req EntryRequest) (ReloadResult, error)
	// Restart runs entry id's same config anew, as an edit of the entry
	// would (restart.go).
	Restart(ctx context.Context, id string) (ReloadResult, error)
}

// Status is a host's instances and how many tools each registered.
type Status struct {
	PID        int                   `json:"pid"`
	File       string                `json:"file"`
	Instances  []host.InstanceStatus `json:"instances"`
	ToolCounts map[string]int        `json:"toolCounts"`
}

// StatusEvent is one instance's change of state. Dropped counts the
// changes lost before it because the follower was behind.
type StatusEvent struct {
	Instance host.InstanceStatus `json:"instance"`
	Dropped  int                 `json:"dropped,omitempty"`
}

// Tool is one registered tool as listings show it.
type Tool struct {
	Name string `json:"name"`
	// Server, RawName and Instance are where it comes from: its MCP
	// server, its name there, and the composition entry.
	Server      string `json:"server,omitempty"`
	RawName     string `json:"rawName,omitempty"`
	Instance    string `json:"instance,omitempty"`
	Folded      bool   `json:"folded"`
	Description string `json:"description"`
	// Hidden notes the invisible characters the description carries
	// (pins.HiddenText): text a model reads and a person does not see.
	Hidden string `json:"hidden,omitempty"`
	// Withheld is true for a registered tool the caller is not offered
	// (the policy holds it until it is trusted, or its rules deny it to
	// the caller): calls are refused.
	Withheld bool `json:"withheld,omitempty"`
}

// ToolsRequest names the caller a tools listing or a prompt is for: the
// kind of front end, as CallRequest.Caller (call when empty), whose
// policy rules decide what is withheld.
type ToolsRequest struct {
	Caller string `json:"caller,omitempty"`
}

// ToolList is every tool a command-line caller sees, and the instances.
type ToolList struct {
	Tools     []Tool                `json:"tools"`
	Instances []host.InstanceStatus `json:"instances"`
}

// CallRequest is one tool call.
type CallRequest struct {
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	ImageInput bool            `json:"imageInput,omitempty"`
	// Elicit is how a server's questions are answered when Answer is
	// nil: "defaults" accepts a form's defaults, "decline" declines,
	// empty leaves them to the host's installed answerer.
	Elicit string `json:"elicit,omitempty"`
	// Yes approves the call where the policy would ask, Answer or not
	// (`dsh-host call --yes`, a console of `chat --yes`).
	Yes bool `json:"yes,omitempty"`
	// Caller is the kind of front end the call is made as, which the
	// policy's rules match: tools.CallerCall (when empty),
	// tools.CallerConsole or tools.CallerUI (the web console). No other
	// is accepted: a front end may not claim to be the gateway (remote
	// callers) or the agent.
	Caller string `json:"caller,omitempty"`
	// Progress, when set, receives the call's progress reports (its
	// tools.Channels.Progress).
	Progress func(tools.Progress) `json:"-"`
	// Answer, when set, answers the server's questions (elicitation) and
	// the policy's asks during the call. Over a socket it is asked
	// through the caller's connection; a question it leaves unanswered
	// past the host's bound is declined.
	Answer elicit.Answerer `json:"-"`
}

// Prompt is the model-facing tools array: its exact bytes, the system
// prompt sections and the number of tools.
type Prompt struct {
	ToolsJSON string          `json:"toolsJSON"`
	Sections  []tools.Section `json:"sections"`
	Count     int             `json:"count"`
}

// CommandRequest is one slash command line.
type CommandRequest struct {
	Line   string `json:"line"`
	Elicit string `json:"elicit,omitempty"`
	// Caller is who runs the command, as CallRequest.Caller.
	Caller string `json:"caller,omitempty"`
	// Answer is CallRequest.Answer for the command's questions.
	Answer elicit.Answerer `json:"-"`
	// Conversation is the chat front end's (ChatInfo.Conversation), which
	// the agent's commands (/new, /compact, /context, /cost) act on;
	// empty: the agent's main conversation.
	Conversation string `json:"conversation,omitempty"`
}

// CommandInfo is one registered slash command, as /help lists it.
type CommandInfo struct {
	Name        string `json:"name"` // without the slash
	Usage       string `json:"usage,omitempty"`
	Description string `json:"description"`
}

// ResourcesRequest filters a resources listing (resources.Filter).
type ResourcesRequest struct {
	Server string `json:"server,omitempty"`
	Query  string `json:"query,omitempty"`
}

// ResourceList is every resource and template that passed the filter,
// and the instances.
type ResourceList struct {
	Resources []resources.Resource  `json:"resources"`
	Templates []resources.Template  `json:"templates"`
	Instances []host.InstanceStatus `json:"instances"`
}

// ReadRequest reads one resource: URI, or Template expanded with Args.
// Server names the server to ask; empty routes it (resources.Registry).
type ReadRequest struct {
	URI      string            `json:"uri,omitempty"`
	Template string            `json:"template,omitempty"`
	Args     map[string]string `json:"args,omitempty"`
	Server   string            `json:"server,omitempty"`
}

// ReadAnswer is a read as the server sent it, and its text for a person:
// an image or other binary content kept in the host's attachment store
// and shown by reference.
type ReadAnswer struct {
	resources.Read
	Text string `json:"text"`
}

// ReloadResult is the outcome of a reload: Error is empty when the
// composition was applied.
type ReloadResult struct {
	Error     string                `json:"error,omitempty"`
	Instances []host.InstanceStatus `json:"instances"`
	// Outcomes says how each entry the reload touched came out: started,
	// restarted, kept (its new config failed; the previous one runs),
	// failed, pending or disposed.
	Outcomes []host.Outcome `json:"outcomes,omitempty"`
}

// TrustRequest names the tools of a review or an approval: Server's
// (only Tool's when set). Digest is the review's, for Trust.
type TrustRequest struct {
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// Review is how the current definitions differ from the trusted ones.
// Pending is false when there is nothing to approve; Digest names exactly
// what Text shows.
type Review struct {
	Text    string `json:"text"`
	Digest  string `json:"digest,omitempty"`
	Pending bool   `json:"pending"`
	// Error is the policy's refusal (an unknown server), as Text.
	Error bool `json:"error,omitempty"`
}

// ExplainRequest is the call the policy explains: Tool with Args (a
// JSON object; what does not parse is passed as it is, and the policy
// says it cannot read it), as Caller's kind ("call" when empty: console,
// chat, call, gateway) with the identity Subject and Groups would give.
type ExplainRequest struct {
	Tool    string   `json:"tool"`
	Args    string   `json:"args,omitempty"`
	Caller  string   `json:"caller,omitempty"`
	Subject string   `json:"subject,omitempty"`
	Groups  []string `json:"groups,omitempty"`
}

// questionWait bounds how long a question waits for its answer before it
// is declined: a front end that went quiet must not hold the call, nor
// its server, for ever.
const questionWait = 5 * time.Minute

// QuestionWait is questionWait, for the socket's server.
func QuestionWait() time.Duration { return questionWait }
