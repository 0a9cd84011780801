package webui

import (
	"context"
	"encoding/json"
	"time"
)

// Ask is a call a policy rule sent to ask, waiting for this console's
// answer: who calls, what, and with which arguments.
type Ask struct {
	ID          string          `json:"id"`
	Composition string          `json:"composition"`
	PID         int             `json:"pid"`
	Caller      string          `json:"caller"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Rule        string          `json:"rule"`
	Asked       time.Time       `json:"asked"`
	Deadline    time.Time       `json:"deadline"`
}

// Args is the arguments indented for reading.
func (a Ask) Args() string { return pretty(a.Arguments) }

// AskEvent is a change of the pending asks: a new one, or one answered or
// expired (by its ID).
type AskEvent struct {
	Ask      *Ask   `json:"ask,omitempty"`
	Answered string `json:"answered,omitempty"`
	Expired  string `json:"expired,omitempty"`
}

// Asks are the composition's approvals this console answers (the approval
// broker's console side).
type Asks interface {
	Pending() []Ask
	// Subscribe follows the changes until ctx ends; a slow reader loses
	// changes (the page then reloads the list).
	Subscribe(ctx context.Context) <-chan AskEvent
	// Answer answers one ask: once, session, always or deny.
	Answer(id, answer string) error
}
