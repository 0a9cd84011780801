package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/agent"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// ChatRequest is one turn of a conversation with the agent: Text as the
// user's message, or, when Text is "/PROMPT ARGS" and PROMPT is an MCP
// prompt the agent offers, that prompt's messages.
type ChatRequest struct {
	Text string `json:"text"`
	// Conversation is the front end's (ChatInfo.Conversation); empty:
	// the agent's main conversation.
	Conversation string `json:"conversation,omitempty"`
	// Record saves the conversation in a new session when it has none
	// (ChatSession's Record does the same up front).
	Record bool `json:"record,omitempty"`
	// PromptOnly runs the turn only when Text is "/PROMPT ARGS" of an MCP
	// prompt the agent offers; else the result says NotPrompt and nothing
	// was sent (a console's slash line that may be a prompt).
	PromptOnly bool `json:"promptOnly,omitempty"`
	// Events, when set, receives the turn as it happens, from one
	// goroutine at a time.
	Events func(ChatEvent) `json:"-"`
	// Answer answers the questions of the turn's tool calls (a server's
	// elicitation, the policy's ask), as CallRequest.Answer.
	Answer elicit.Answerer `json:"-"`
	// Unattended says nobody is there to answer (chat -p): where the
	// policy would ask, Yes approves and its absence denies, naming
	// --yes, so the model reads why.
	Unattended bool `json:"unattended,omitempty"`
	Yes        bool `json:"yes,omitempty"`
}

// The kinds of a ChatEvent.
const (
	ChatText      = "text"       // Text: answer text as it streams
	ChatReasoning = "reasoning"  // Text: reasoning text as it streams
	ChatStep      = "step"       // Text, Calls, Usage: one model message
	ChatCallStart = "call-start" // Call: a tool call about to run
	ChatCallDone  = "call-done"  // Call, Result, Error: its outcome
	ChatProgress  = "progress"   // Call.Name, Progress: a call's report
	ChatStatus    = "status"     // Text: the agent's status line (a retry's wait)
	ChatRestarted = "restarted"  // first: a reload restarted the agent (ChatResult.Restarted)
)

// ChatEvent is one thing a turn did.
type ChatEvent struct {
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
	// Reasoning is a ChatStep's reasoning, whole.
	Reasoning string          `json:"reasoning,omitempty"`
	Calls     []ChatCall      `json:"calls,omitempty"`
	Usage     *ChatUsage      `json:"usage,omitempty"`
	Call      *ChatCall       `json:"call,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	Progress  *tools.Progress `json:"progress,omitempty"`
	// Refused: a ChatCallDone the policy refused (a denial, an ask
	// answered no).
	Refused bool `json:"refused,omitempty"`
}

// ChatCall is a tool call the model asked for, its arguments as sent.
type ChatCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// Input is the call's arguments as JSON: an object as sent, {} for none,
// a JSON string for what does not parse (agent.ToolCall.Input).
func (c ChatCall) Input() json.RawMessage { return agent.ToolCall(c).Input() }

// ChatUsage counts the tokens of a turn (agent.Usage).
type ChatUsage struct {
	Prompt       int64 `json:"prompt"`
	CachedPrompt int64 `json:"cachedPrompt,omitempty"`
	Completion   int64 `json:"completion"`
	Cached       bool  `json:"cached,omitempty"`
	// Cost is in US dollars; Priced says the model had a price for
	// every request counted (the agent's price key), so Cost is whole.
	Cost      float64 `json:"costUsd,omitempty"`
	Priced    bool    `json:"priced,omitempty"`
	APIMillis int64   `json:"apiMs,omitempty"`
}

// String is the line a front end shows after a turn.
func (u ChatUsage) String() string { return agent.Usage(u).String() }

// Dollars shows a cost in US dollars as the turn's line does.
func Dollars(usd float64) string { return agent.Dollars(usd) }

// ChatResult is what a turn did. Error is the turn's failure (the model
// API's, a cancel), empty when it answered; MaxSteps says it stopped
// because the model still asked for tools after the agent's maxSteps.
type ChatResult struct {
	Answer string    `json:"answer"`
	Steps  int       `json:"steps"`
	Usage  ChatUsage `json:"usage"`
	// Spent is the conversation's usage and cost so far, this turn's
	// included.
	Spent ChatUsage `json:"spent"`
	// Prompt is the MCP prompt the turn inserted ("" for a message);
	// Inserted says it ended with the assistant's message, so nothing
	// was sent to the model.
	Prompt   string `json:"prompt,omitempty"`
	Inserted bool   `json:"inserted,omitempty"`
	Error    string `json:"error,omitempty"`
	Canceled bool   `json:"canceled,omitempty"`
	MaxSteps bool   `json:"maxSteps,omitempty"`
	// Cut says the answer stopped at the model's output limit
	// (ErrCut): Answer is not whole.
	Cut bool `json:"cut,omitempty"`
	// Session is the id of the session the turn was saved in.
	Session string `json:"session,omitempty"`
	// Restarted says the agent is not the one of this front end's last
	// turn (a reload restarted it), so the turn began a new conversation.
	Restarted bool `json:"restarted,omitempty"`
	// NotPrompt: a PromptOnly turn's Text names no prompt; nothing ran.
	NotPrompt bool `json:"notPrompt,omitempty"`
}

// Bounds of the transcript ChatInfo carries (over the control socket
// too): its last lines, each text cut. A front end shows fewer.
const (
	maxTranscriptLines = 200
	maxTranscriptText  = 4 << 10
)

// transcriptTail is the end of a session's transcript, within the bounds.
func transcriptTail(said []sessions.Said) []ChatSaid {
	said = said[max(len(said)-maxTranscriptLines, 0):]
	out := make([]ChatSaid, len(said))
	for i, s := range said {
		if n := maxTranscriptText; len(s.Text) > n {
			for n > 0 && !utf8.RuneStart(s.Text[n]) {
				n--
			}
			s.Text = s.Text[:n] + "…"
		}
		out[i] = ChatSaid(s)
	}
	return out
}

// ErrCut is what a front end says of a turn whose answer was cut at the
// model's output limit (ChatResult.Cut).
var ErrCut = errors.New("the answer was cut: the model stopped at its output limit (finish_reason length); ask it to go on, or for a shorter answer")

// ChatCompactRequest names the conversation to compact
// (ChatInfo.Conversation; empty: the main one).
type ChatCompactRequest struct {
	Conversation string `json:"conversation,omitempty"`
}

// ChatSessionsRequest names the conversation whose session the listing
// marks Current (ChatInfo.Conversation; empty: the main one).
type ChatSessionsRequest struct {
	Conversation string `json:"conversation,omitempty"`
}

// ChatCompactResult says how many messages a summary replaced.
type ChatCompactResult struct {
	Replaced int       `json:"replaced"`
	Usage    ChatUsage `json:"usage"`
}

// ChatSessionRequest starts a new conversation (Resume empty) or resumes
// the recorded session Resume; Record saves a new one's turns. Without
// Conversation it is a new conversation of the front end's own (its
// handle in ChatInfo); with it, that conversation starts anew (/resume
// in a console).
type ChatSessionRequest struct {
	Resume       string `json:"resume,omitempty"`
	Record       bool   `json:"record,omitempty"`
	Conversation string `json:"conversation,omitempty"`
}

// ChatInfo is the conversation a front end now talks in.
type ChatInfo struct {
	// Conversation is the handle the front end's requests name
	// (ChatRequest.Conversation...): random, 128 bits in hex.
	Conversation string `json:"conversation"`
	Model        string `json:"model"`
	Session      string `json:"session,omitempty"`
	// Turns is the turns a resumed session brought back, Messages the
	// messages the conversation holds now; Warnings is what was wrong
	// with the session's file but could be skipped.
	Turns    int      `json:"turns,omitempty"`
	Messages int      `json:"messages,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Tools names the tools the model is offered now, as its next
	// request carries them (folded: mcp_list and mcp_call).
	Tools []string `json:"tools"`
	// Transcript is what was said in a resumed session, for a front end
	// to show again; Pending the line of its last turn that got no
	// answer (failed or cancelled), when none came after it.
	Transcript []ChatSaid `json:"transcript,omitempty"`
	// Spent is what the conversation's requests used and cost so far (a
	// resumed session's saved turns).
	Spent   ChatUsage `json:"spent"`
	Pending string    `json:"pending,omitempty"`
}

// ChatSaid is one line of a session's transcript (sessions.Said): Role
// "user", "assistant", or "tool" (Text: a call's name and arguments).
type ChatSaid struct {
	Time       time.Time `json:"time"`
	Role       string    `json:"role"`
	Text       string    `json:"text"`
	Unanswered bool      `json:"unanswered,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Session is one recorded conversation.
type Session struct {
	ID          string    `json:"id"`
	Composition string    `json:"composition"`
	Started     time.Time `json:"started"`
	Updated     time.Time `json:"updated"`
	FirstLine   string    `json:"firstLine"`
	Turns       int       `json:"turns"`
	// Unanswered counts the turns that failed or were cancelled.
	Unanswered int `json:"unanswered,omitempty"`
	// Current marks the session the conversation saves in now.
	Current bool `json:"current,omitempty"`
}

// SessionList is the recorded sessions, newest first, and the files that
// could not be read.
type SessionList struct {
	Dir      string    `json:"dir"`
	Sessions []Session `json:"sessions"`
	Warnings []string  `json:"warnings,omitempty"`
}

// ErrNoAgent: the composition runs no agent, or it is not active.
var ErrNoAgent = errors.New("the agent is not running: the composition needs an enabled entry of plugin agent (dsh-host status says why it is not active)")

func (l *Local) agent() (*agent.Agent, error) {
	a, ok := lookup(l.Host, agent.Key)
	if !ok {
		for _, st := range l.Host.Status() {
			if st.Plugin == agent.PluginName && st.State != host.StateDisabled {
				return nil, agentDown{st}
			}
		}
		return nil, ErrNoAgent
	}
	return a, nil
}

func usageOf(u agent.Usage) ChatUsage {
	return ChatUsage(u)
}

// eventWriter turns a stream of text into events of kind.
type eventWriter struct {
	kind string
	emit func(ChatEvent)
}

func (w eventWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.emit(ChatEvent{Kind: w.kind, Text: string(p)})
	}
	return len(p), nil
}

// Chat runs one turn on req's conversation.
func (l *Local) Chat(ctx context.Context, req ChatRequest) (ChatResult, error) {
	a, err := l.agent()
	if err != nil {
		return ChatResult{}, err
	}
	prompt, args := "", ""
	if line, ok := strings.CutPrefix(strings.TrimSpace(req.Text), "/"); ok {
		name, rest, _ := strings.Cut(line, " ")
		if a.IsPrompt(name) {
			prompt, args = name, strings.TrimSpace(rest)
		}
	}
	if req.PromptOnly && prompt == "" {
		return ChatResult{NotPrompt: true}, nil
	}
	// After that: a line that runs nothing takes no restart's news.
	conv, restarted, err := l.conversation(a, req.Conversation, true)
	if err != nil {
		return ChatResult{}, err
	}
	if restarted && req.Events != nil {
		// Before the turn's output: a front end says so first.
		req.Events(ChatEvent{Kind: ChatRestarted})
	}
	if req.Record && conv.Session() == nil {
		// A session starts with the conversation's first turn (a new
		// one, a restarted agent), so an empty one leaves no file; one
		// that cannot be saved still talks.
		if err := l.record(conv, a.Model()); err != nil {
			if req.Events == nil {
				return ChatResult{}, err
			}
			req.Events(ChatEvent{Kind: ChatStatus, Text: err.Error() + "; this conversation is not saved\n"})
		}
	}
	out := l.chatOutput(req.Events)
	out.Answerer = req.Answer
	if req.Unattended {
		out.OneShot = &tools.OneShot{Yes: req.Yes}
	}
	var res agent.Result
	if prompt != "" {
		res, err = conv.Prompt(ctx, prompt, args, out)
	} else {
		res, err = conv.Turn(ctx, req.Text, out)
	}
	r := ChatResult{Answer: res.Answer, Steps: res.Steps, Usage: usageOf(res.Usage), Spent: usageOf(conv.Spent()), Prompt: prompt, Restarted: restarted, Cut: res.Cut}
	if prompt != "" && err == nil && res.Steps == 0 && res.Usage == (agent.Usage{}) {
		r.Inserted = true
	}
	if err != nil {
		r.Error = err.Error()
		r.Canceled = errors.Is(err, context.Canceled)
		r.MaxSteps = errors.Is(err, agent.ErrMaxSteps)
	}
	if s := conv.Session(); s != nil {
		r.Session = s.ID
	}
	return r, nil
}

// chatOutput sends a turn's text, reasoning, steps, calls and progress
// to emit, serialized: the calls of a step report progress at once.
func (l *Local) chatOutput(emit func(ChatEvent)) agent.Output {
	if emit == nil {
		return agent.Output{}
	}
	emit = serialized(emit)
	return agent.Output{
		Text:      eventWriter{ChatText, emit},
		Reasoning: eventWriter{ChatReasoning, emit},
		Status:    eventWriter{ChatStatus, emit},
		Progress: func(tool string, p tools.Progress) {
			emit(ChatEvent{Kind: ChatProgress, Call: &ChatCall{Name: tool}, Progress: &p})
		},
		Events: func(e agent.Event) {
			switch e.Kind {
			case agent.EventStep:
				u := usageOf(e.Usage)
				ev := ChatEvent{Kind: ChatStep, Text: e.Text, Reasoning: e.Reasoning, Usage: &u}
				for _, c := range e.Calls {
					ev.Calls = append(ev.Calls, ChatCall(c))
				}
				emit(ev)
			case agent.EventCallStart:
				c := ChatCall(e.Call)
				emit(ChatEvent{Kind: ChatCallStart, Call: &c})
			case agent.EventCallDone:
				c := ChatCall(e.Call)
				ev := ChatEvent{Kind: ChatCallDone, Call: &c, Result: e.Result, Refused: e.Refused}
				if e.Err != nil {
					ev.Error = e.Err.Error()
				}
				emit(ev)
			}
		},
	}
}

// ChatCompact summarizes the older turns of req's conversation.
func (l *Local) ChatCompact(ctx context.Context, req ChatCompactRequest) (ChatCompactResult, error) {
	a, err := l.agent()
	if err != nil {
		return ChatCompactResult{}, err
	}
	conv, _, err := l.conversation(a, req.Conversation, false)
	if err != nil {
		return ChatCompactResult{}, err
	}
	n, u, err := conv.Compact(ctx, agent.Output{})
	if err != nil {
		return ChatCompactResult{}, err
	}
	return ChatCompactResult{Replaced: n, Usage: usageOf(u)}, nil
}

// ChatSession starts a new conversation, or resumes a recorded one: in
// req's conversation, else in a new one of the front end's own.
func (l *Local) ChatSession(ctx context.Context, req ChatSessionRequest) (ChatInfo, error) {
	a, err := l.agent()
	if err != nil {
		return ChatInfo{}, err
	}
	var conv *agent.Conversation
	id := req.Conversation
	if id != "" {
		// A restart of the agent is not news to a session that starts
		// anew: its next turn does not say it.
		if conv, _, err = l.conversation(a, id, true); err != nil {
			return ChatInfo{}, err
		}
	}
	if req.Resume != "" {
		// A session that does not open takes no handle.
		dir, err := sessions.Dir()
		if err != nil {
			return ChatInfo{}, err
		}
		ls, err := sessions.Open(dir, req.Resume)
		if err != nil {
			return ChatInfo{}, err
		}
		fresh := conv == nil
		if fresh {
			id, conv = l.newConversation(a)
		}
		if err := conv.Resume(ls); err != nil {
			if fresh {
				l.dropConversation(id)
			}
			return ChatInfo{}, err
		}
		info := ChatInfo{Conversation: id, Model: a.Model(), Tools: l.agentTools(ctx, a)}
		info.Session, info.Turns, info.Warnings, info.Messages = ls.ID, ls.Info.Turns, ls.Warnings, conv.Len()
		info.Pending, info.Spent = ls.Pending, usageOf(conv.Spent())
		info.Transcript = transcriptTail(ls.Transcript)
		return info, nil
	}
	fresh := conv == nil
	if fresh {
		id, conv = l.newConversation(a)
	}
	info := ChatInfo{Conversation: id, Model: a.Model(), Tools: l.agentTools(ctx, a)}
	conv.Reset()
	if req.Record {
		if err := l.record(conv, info.Model); err != nil {
			if fresh {
				l.dropConversation(id)
			}
			return ChatInfo{}, err
		}
		info.Session = conv.Session().ID
	}
	return info, nil
}

// record saves conv's later turns in a new session of l's composition.
func (l *Local) record(conv *agent.Conversation, model string) error {
	dir, err := sessions.Dir()
	if err != nil {
		return err
	}
	// --continue finds a composition's sessions by its absolute path.
	abs, err := filepath.Abs(l.File)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", l.File, err)
	}
	sess, err := sessions.New(dir, abs, model)
	if err != nil {
		return err
	}
	conv.Record(sess)
	return nil
}

// ChatSessions lists the recorded sessions, marking req's conversation's.
func (l *Local) ChatSessions(_ context.Context, req ChatSessionsRequest) (SessionList, error) {
	dir, err := sessions.Dir()
	if err != nil {
		return SessionList{}, err
	}
	out, err := ListSessions(dir)
	if err != nil {
		return SessionList{}, err
	}
	if a, err := l.agent(); err == nil {
		conv, _, err := l.conversation(a, req.Conversation, false)
		if err != nil {
			return SessionList{}, err
		}
		if s := conv.Session(); s != nil {
			for i := range out.Sessions {
				out.Sessions[i].Current = out.Sessions[i].ID == s.ID
			}
		}
	}
	return out, nil
}

// ListSessions lists the sessions recorded in dir, newest first: what a
// front end reads before its host starts (chat --resume's picker).
func ListSessions(dir string) (SessionList, error) {
	list, warnings, err := sessions.List(dir)
	if err != nil {
		return SessionList{}, err
	}
	out := SessionList{Dir: dir, Sessions: []Session{}, Warnings: warnings}
	for _, s := range list {
		out.Sessions = append(out.Sessions, sessionOf(s))
	}
	return out, nil
}

func sessionOf(s sessions.Info) Session {
	return Session{ID: s.ID, Composition: s.Composition, Started: s.Started, Updated: s.Updated,
		FirstLine: s.FirstLine, Turns: s.Turns, Unanswered: s.Unanswered}
}

// lastAgent notes a as the agent of the main conversation's turns and
// says whether it replaced another (a reload restarted it: a new, empty
// conversation).
func (l *Local) lastAgent(a *agent.Agent) bool {
	l.chatMu.Lock()
	defer l.chatMu.Unlock()
	restarted := l.chatAgent != nil && l.chatAgent != a
	l.chatAgent = a
	return restarted
}

// agentTools names the tools offered to a's caller now; empty when the
// registry cannot say.
func (l *Local) agentTools(ctx context.Context, a *agent.Agent) []string {
	names := []string{}
	reg, err := l.registry()
	if err != nil {
		return names
	}
	asm, err := reg.Assemble(ctx, a.Caller())
	if err != nil {
		return names
	}
	for _, t := range asm.Tools {
		names = append(names, t.Name)
	}
	return names
}
