package chatapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
)

// toolTurn is a tool-calling turn: a question, a tool call, its result,
// the answer.
func toolTurn() []openai.ChatCompletionMessageParamUnion {
	asst := openai.ChatCompletionAssistantMessageParam{}
	asst.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID:       "call_a",
		Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "mcp_call", Arguments: `{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}}`},
	}}}
	answer := openai.ChatCompletionAssistantMessageParam{}
	answer.Content.OfString = openai.String("The sum is 3.")
	return []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("What is 1+2?"),
		{OfAssistant: &asst},
		openai.ToolMessage("3", "call_a"),
		{OfAssistant: &answer},
	}
}

// BenchmarkReasoningMissing is what a step spends, under send, to look
// for a tool-calling turn without reasoning in a 200-turn history.
func BenchmarkReasoningMissing(b *testing.B) {
	var history []openai.ChatCompletionMessageParamUnion
	for range 200 {
		turn := toolTurn()
		for _, m := range turn {
			if m.OfAssistant != nil {
				SetReasoning(m.OfAssistant, "why")
			}
		}
		history = append(history, turn...)
	}
	for b.Loop() {
		if ReasoningMissing(history) {
			b.Fatal("missing")
		}
	}
}

// TestRestoreReasoningHostileSession: a session file's reasoning_content
// is put back only as a non-empty string on an assistant message; a
// number, an object, an empty string or one on a user message is dropped
// (the turn then counts as without reasoning, and thinking goes off)
// rather than sent back as the file has it.
func TestRestoreReasoningHostileSession(t *testing.T) {
	cases := []struct {
		raw  string
		want string
	}{
		{`{"role":"assistant","content":"x","reasoning_content":"R"}`, "R"},
		{`{"role":"assistant","content":"x","reasoning_content":42}`, ""},
		{`{"role":"assistant","content":"x","reasoning_content":{"a":1}}`, ""},
		{`{"role":"assistant","content":"x","reasoning_content":""}`, ""},
		{`{"role":"assistant","content":"x","reasoning_content":null}`, ""},
		{`{"role":"user","content":"x","reasoning_content":"R"}`, ""},
	}
	for _, tc := range cases {
		var m openai.ChatCompletionMessageParamUnion
		if err := json.Unmarshal([]byte(tc.raw), &m); err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		RestoreReasoning(&m, json.RawMessage(tc.raw))
		got := ""
		if m.OfAssistant != nil {
			got = Reasoning(m.OfAssistant)
			if tc.want == "" && m.OfAssistant.ExtraFields() != nil {
				t.Errorf("%s: extra fields %v kept", tc.raw, m.OfAssistant.ExtraFields())
			}
		} else if b, _ := json.Marshal(m); bytes.Contains(b, []byte(ReasoningField)) {
			t.Errorf("%s: encodes as %s", tc.raw, b)
		}
		if got != tc.want {
			t.Errorf("%s: reasoning %q, want %q", tc.raw, got, tc.want)
		}
	}
}
