package sessions

import (
	"encoding/json"
	"strings"
	"time"
)

// Said is one line of a session's transcript: what the person asked, what
// the assistant answered, a tool it called.
type Said struct {
	Time time.Time `json:"time"`
	// Role is "user", "assistant" or "tool" (a call: Text is its name and
	// arguments).
	Role string `json:"role"`
	Text string `json:"text"`
	// Unanswered: the person's message of a turn that failed or was
	// cancelled, Error why.
	Unanswered bool   `json:"unanswered,omitempty"`
	Error      string `json:"error,omitempty"`
}

// said adds the messages of a turn or an unanswered line to the
// transcript. Tool results are left out: their calls say what ran.
func (ls *Loaded) said(sl sessionLine, unanswered bool) error {
	for _, raw := range sl.Messages {
		var m struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		switch m.Role {
		case "user":
			text := contentText(m.Content)
			if unanswered && sl.Text != "" {
				text = sl.Text // as typed: a mention's attachment is not repeated
			}
			if text == "" {
				continue // a step's images, after its tool results
			}
			ls.Transcript = append(ls.Transcript, Said{Time: sl.Time, Role: "user", Text: text, Unanswered: unanswered, Error: sl.Error})
		case "assistant":
			if text := contentText(m.Content); text != "" {
				ls.Transcript = append(ls.Transcript, Said{Time: sl.Time, Role: "assistant", Text: text})
			}
			for _, tc := range m.ToolCalls {
				ls.Transcript = append(ls.Transcript, Said{Time: sl.Time, Role: "tool", Text: strings.TrimSpace(tc.Function.Name + " " + tc.Function.Arguments)})
			}
		}
	}
	ls.Pending = ""
	if unanswered {
		ls.Pending = sl.Text
	}
	return nil
}

// contentText is a message content's text: a string as it is, the text
// parts of an array joined by "\n" (an image part is left out, a mention's
// attached resource too: it follows the person's text as a part of its
// own).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			return p.Text
		}
	}
	return ""
}
