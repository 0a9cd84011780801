package agent

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
