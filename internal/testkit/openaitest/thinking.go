package openaitest

import (
	"encoding/json"
	"fmt"
)

// DeepSeek's thinking mode (api-docs.deepseek.com/guides/thinking_mode):
// between two user messages, when the model called tools, the reasoning
// of those assistant messages must be passed back in every later request,
// or the API answers 400. A request can turn thinking off with
// "thinking": {"type": "disabled"}; the rule is then not applied and the
// answer has no reasoning.

// refusedReasoning is the message of DeepSeek's 400.
const refusedReasoning = "The `reasoning_content` in the thinking mode must be passed back to the API."

// ThinkingModels holds the requests naming one of models to the
// thinking-mode rule: a request with thinking on (the default) whose
// messages hold an assistant message without reasoning_content (missing or
// empty) between two user messages where the model called tools is
// answered 400, without playing a scripted turn. A request that turns
// thinking off plays its turn without the turn's Reasoning.
func (s *Server) ThinkingModels(models ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.thinking == nil {
		s.thinking = map[string]bool{}
	}
	for _, m := range models {
		s.thinking[m] = true
	}
}

// thinkingRule applies the rule to a request: the 400's message, "" when
// the request stands, and whether it turns a thinking model's thinking
// off. Without thinking models no request is decoded. s.mu is held.
func (s *Server) thinkingRule(body []byte) (refusal string, off bool) {
	if len(s.thinking) == 0 {
		return "", false
	}
	var req struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Thinking struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	if json.Unmarshal(body, &req) != nil || !s.thinking[req.Model] {
		return "", false
	}
	if req.Thinking.Type == "disabled" {
		return "", true
	}
	return reasoningRefusal(req.Messages), false
}

// reasoningRefusal returns the 400's message for a thinking request's
// messages, "" when they hold every reasoning the rule asks for.
func reasoningRefusal(messages []json.RawMessage) string {
	type msg struct {
		Role      string          `json:"role"`
		ToolCalls json.RawMessage `json:"tool_calls"`
		Reasoning *string         `json:"reasoning_content"`
	}
	// One span of messages between two user messages at a time.
	var span []int
	var spanMsgs []msg
	check := func() string {
		called := false
		for _, m := range spanMsgs {
			called = called || m.Role == "assistant" && len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]"
		}
		if !called {
			return ""
		}
		for i, m := range spanMsgs {
			if m.Role == "assistant" && (m.Reasoning == nil || *m.Reasoning == "") {
				return fmt.Sprintf("%s (assistant message at index %d)", refusedReasoning, span[i])
			}
		}
		return ""
	}
	for i, raw := range messages {
		var m msg
		if json.Unmarshal(raw, &m) != nil {
			return fmt.Sprintf("message %d is not an object", i)
		}
		if m.Role == "user" {
			if r := check(); r != "" {
				return r
			}
			span, spanMsgs = nil, nil
			continue
		}
		span, spanMsgs = append(span, i), append(spanMsgs, m)
	}
	return check()
}
