package chatapi

import (
	"encoding/json"

	"github.com/openai/openai-go/v3"
)

// ReasoningField is the field of an assistant message that holds its
// reasoning, in a stream's delta and in a request's history (DeepSeek's
// reasoning_content). openai-go knows no such field: it travels as one of
// the message's extra fields.
const ReasoningField = "reasoning_content"

// ThinkingDisabled is the request field that turns DeepSeek's thinking
// off, spliced after a request's fields (see ReasoningMissing).
const ThinkingDisabled = `,"thinking":{"type":"disabled"}`

// Reasoning returns the reasoning kept on an assistant message, "" when
// none.
func Reasoning(m *openai.ChatCompletionAssistantMessageParam) string {
	r, _ := m.ExtraFields()[ReasoningField].(string)
	return r
}

// SetReasoning keeps r on m; json.Marshal writes it after m's own fields.
func SetReasoning(m *openai.ChatCompletionAssistantMessageParam, r string) {
	m.SetExtraFields(map[string]any{ReasoningField: r})
}

// RestoreReasoning puts back the reasoning of a saved assistant message
// (raw), which openai-go's decoder drops, so that the message encodes as
// saved. An empty one, or one that is not a string, is not put back: the
// agent never saves one, and some of DeepSeek's models refuse it, so the
// turn counts as without reasoning.
func RestoreReasoning(m *openai.ChatCompletionMessageParamUnion, raw json.RawMessage) {
	if m.OfAssistant == nil {
		return
	}
	var f struct {
		Reasoning *string `json:"reasoning_content"`
	}
	if json.Unmarshal(raw, &f) == nil && f.Reasoning != nil && *f.Reasoning != "" {
		SetReasoning(m.OfAssistant, *f.Reasoning)
	}
}

// WithoutReasoning returns history with no reasoning on its messages (for
// an API that refuses the field); the messages holding one are replaced,
// not changed in place.
func WithoutReasoning(history []openai.ChatCompletionMessageParamUnion) []openai.ChatCompletionMessageParamUnion {
	for i, m := range history {
		if a := m.OfAssistant; a != nil && a.ExtraFields() != nil {
			c := *a
			c.SetExtraFields(nil)
			history[i] = openai.ChatCompletionMessageParamUnion{OfAssistant: &c}
		}
	}
	return history
}

// ReasoningMissing says whether history holds a tool-calling turn (the
// messages between two user messages, when one asks for tools) with an
// assistant message that has no reasoning: the request DeepSeek's thinking
// mode refuses (a 400), which goes with ThinkingDisabled instead.
func ReasoningMissing(history []openai.ChatCompletionMessageParamUnion) bool {
	called, missing := false, false
	for _, m := range history {
		switch {
		case m.OfUser != nil:
			if called && missing {
				return true
			}
			called, missing = false, false
		case m.OfAssistant != nil:
			called = called || len(m.OfAssistant.ToolCalls) > 0
			missing = missing || Reasoning(m.OfAssistant) == ""
		}
	}
	return called && missing
}
