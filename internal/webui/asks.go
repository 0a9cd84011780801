package webui

import (
	"github.com/dsh-host/dsh-host/internal/askbroker"
)

// The Approvals page answers the composition's approval broker
// (internal/askbroker): the asks of every host of the composition whose
// callers no terminal can answer (a gateway client, chat -p, call
// without --yes) wait there for this console.

// askView is an ask as the page shows it.
type askView struct {
	askbroker.Ask
}

// Args is the arguments indented for reading.
func (a askView) Args() string { return pretty(a.Arguments) }

// Takes reports whether the asking host takes answer (deny it always
// takes).
func (a askView) Takes(answer string) bool {
	if answer == string(askbroker.Deny) {
		return true
	}
	for _, c := range a.Choices {
		if string(c) == answer {
			return true
		}
	}
	return false
}

// askLine is a broker event as a page reads it: Fresh for an ask that
// came while the page watched (a notification), not one that waited.
type askLine struct {
	askbroker.Event
	Fresh bool `json:"fresh,omitempty"`
}
