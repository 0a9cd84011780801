package agent

import (
	"encoding/json"

	"github.com/openai/openai-go/v3"
)

// Reasoning sent back. DeepSeek's thinking mode answers 400 to a request
// whose history holds a tool-calling turn without the reasoning the model
// wrote in it (reasoning_content on those assistant messages); in turns
// without tool calls it ignores it. Other APIs may refuse a field they do
// not know. reasoningContent says which it is: send keeps the reasoning of
// tool-calling turns on their assistant messages (and in the session), omit
// keeps none, auto is send for DeepSeek's API and omit elsewhere.
//
// A tool-calling turn whose reasoning is not there (a session saved before
// it was kept, a model that wrote none, a switch from a model that does
// not think) cannot be repaired: an empty reasoning_content is refused by
// some of DeepSeek's models, and a made-up one is read by the model as its
// own. Such a request turns thinking off ("thinking": {"type":
// "disabled"}, DeepSeek's switch), under which the rule does not apply;
// thinking comes back once compaction or /new drops those turns.
const (
	reasoningAuto = "auto"
	reasoningSend = "send"
	reasoningOmit = "omit"
)

// reasoningField is the field of a message's reasoning.
const reasoningField = "reasoning_content"

// thinkingDisabled is the request field that turns thinking off.
const thinkingDisabled = `,"thinking":{"type":"disabled"}`

func checkReasoning(c *config) error {
	return oneOf("reasoningContent", &c.ReasoningContent, "choice",
		"auto (send for DeepSeek's API, else omit), send (the reasoning of tool-calling turns goes back to the model, as DeepSeek's thinking mode requires) or omit (for an API that refuses the field)",
		reasoningAuto, reasoningSend, reasoningOmit)
}

// sendsReasoning says whether cfg's requests carry the reasoning back.
func sendsReasoning(cfg config) bool {
	switch cfg.ReasoningContent {
	case reasoningSend:
		return true
	case reasoningOmit:
		return false
	}
	return isDeepSeekURL(cfg.BaseURL)
}

// reasoningOf returns the reasoning kept on an assistant message, "" when
// none.
func reasoningOf(m *openai.ChatCompletionAssistantMessageParam) string {
	r, _ := m.ExtraFields()[reasoningField].(string)
	return r
}

// setReasoning keeps r on m; json.Marshal writes it after m's own fields.
func setReasoning(m *openai.ChatCompletionAssistantMessageParam, r string) {
	m.SetExtraFields(map[string]any{reasoningField: r})
}

// restoreReasoning puts back the reasoning of a saved assistant message,
// which openai-go's decoder drops, so that the message encodes as saved.
// An empty one is not put back: the agent never saves one, and some of
// DeepSeek's models refuse it, so the turn counts as without reasoning.
func restoreReasoning(m *openai.ChatCompletionMessageParamUnion, raw json.RawMessage) {
	if m.OfAssistant == nil {
		return
	}
	var f struct {
		Reasoning *string `json:"reasoning_content"`
	}
	if json.Unmarshal(raw, &f) == nil && f.Reasoning != nil && *f.Reasoning != "" {
		setReasoning(m.OfAssistant, *f.Reasoning)
	}
}

// withoutReasoning returns history with no reasoning on its messages (for
// an API that refuses the field); the messages holding one are replaced,
// not changed in place.
func withoutReasoning(history []openai.ChatCompletionMessageParamUnion) []openai.ChatCompletionMessageParamUnion {
	for i, m := range history {
		if a := m.OfAssistant; a != nil && a.ExtraFields() != nil {
			c := *a
			c.SetExtraFields(nil)
			history[i] = openai.ChatCompletionMessageParamUnion{OfAssistant: &c}
		}
	}
	return history
}

// reasoningMissing says whether history holds a tool-calling turn (the
// messages between two user messages, when one asks for tools) with an
// assistant message that has no reasoning: the request DeepSeek's thinking
// mode refuses.
func reasoningMissing(history []openai.ChatCompletionMessageParamUnion) bool {
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
			missing = missing || reasoningOf(m.OfAssistant) == ""
		}
	}
	return called && missing
}
