package agent

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
	"github.com/dsh-host/dsh-host/services/tools"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventStep is the model's message of one request: its text, the
	// calls it asks for, and the request's usage.
	EventStep EventKind = iota + 1
	// EventCallStart is a tool call about to run.
	EventCallStart
	// EventCallDone is a tool call's outcome.
	EventCallDone
)

// Event is one thing a turn did, for a front end that shows it in a form
// of its own: a terminal's one line per call, JSON for scripts.
type Event struct {
	Kind EventKind
	// Text, Reasoning, Calls and Usage are EventStep's.
	Text      string
	Reasoning string
	Calls     []ToolCall
	Usage     Usage
	// Call is EventCallStart's and EventCallDone's; Result (the text the
	// model reads) and Err are EventCallDone's.
	Call   ToolCall
	Result string
	Err    error
	// Refused says the policy refused the call (tools.ErrRefused).
	Refused bool
}

// ToolCall is a call the model asked for, its arguments as the model sent
// them.
type ToolCall struct {
	ID, Name, Arguments string
}

// Input returns the arguments as JSON: as sent when they are JSON, else
// as a JSON string.
func (c ToolCall) Input() json.RawMessage {
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(c.Arguments)
	return b
}

func exported(tc toolCall) ToolCall { return ToolCall(tc) }

func (o Output) emit(e Event) {
	if o.Events != nil {
		o.Events(e)
	}
}

// step reports a model message.
func (o Output) step(st stepResult) {
	if o.Events == nil {
		return
	}
	e := Event{Kind: EventStep, Text: st.content, Reasoning: st.reasoning, Usage: st.usage}
	for _, tc := range st.calls {
		e.Calls = append(e.Calls, exported(tc))
	}
	o.emit(e)
}

// callStarted reports a call about to run: as an event when Events is
// set, else as a Status line.
func (o Output) callStarted(tc toolCall) {
	if o.Events != nil {
		o.emit(Event{Kind: EventCallStart, Call: exported(tc)})
		return
	}
	o.status("→ %s %s", tc.Name, chatapi.Clip(tc.Arguments, 120))
}

// callDone reports a call's outcome: as an event when Events is set, else
// as a Status line.
func (o Output) callDone(tc toolCall, r toolOutcome) {
	if o.Events != nil {
		o.emit(Event{Kind: EventCallDone, Call: exported(tc), Result: r.text, Err: r.err, Refused: errors.Is(r.err, tools.ErrRefused)})
		return
	}
	if r.err != nil {
		o.status("← %s: error: %s", tc.Name, chatapi.Clip(r.err.Error(), 200))
	} else {
		o.status("← %s: %d characters", tc.Name, len(r.text))
	}
}
